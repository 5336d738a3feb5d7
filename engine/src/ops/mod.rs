//! Ops: what a graph node computes, and what it declares about memory.
//!
//! Every op declares a `view_map` (output → the input whose buffer it
//! shares) and a `destroy_map` (output → the input it overwrites). The
//! destroy handler schedules and validates graphs from these declarations,
//! and the listeners check that ops keep them.

mod attrs;
mod ctx;
mod registry;
#[cfg(test)]
mod testutil;
mod typeinfo;

pub mod activation;
pub mod affine_grid;
pub mod attention;
pub mod bitwise;
pub mod causal_conv;
pub mod center_crop_pad;
pub mod classify;
pub mod col2im;
pub mod conv;
pub mod conv_transpose;
pub mod copy;
pub mod cumsum;
pub mod deform_conv;
pub mod det;
pub mod einsum;
pub mod elements;
pub mod elementwise;
pub mod eye_like;
pub mod fill;
pub mod gather_nd;
pub mod grid_sample;
pub mod group_norm;
pub mod image_decoder;
pub mod instance_norm;
pub mod intdiv;
pub mod layer_norm;
pub mod linalg;
pub mod linear_attention;
pub mod logical;
pub mod max_unpool;
pub mod nn;
pub mod non_max_suppression;
pub mod non_zero;
pub mod norm;
pub mod pad;
pub mod pool;
pub mod quant;
pub mod random;
pub mod range;
pub mod recurrent;
pub mod reduce;
pub mod resize;
pub mod reverse_sequence;
pub mod roi_align;
pub mod rotary;
pub mod scatter_nd;
pub mod selection;
pub mod shape_of;
pub mod slice;
pub mod spectral;
pub mod subtensor;
pub mod tensor_scatter;
pub mod tfidf_vectorizer;
pub mod tile;
pub mod top_k;
pub mod tree_ensemble;
pub mod trilu;
pub mod unique;
pub mod view;
pub mod weight_cache;
mod widen;
pub mod window;

use std::fmt;
use std::sync::Arc;

pub use attrs::{float_list, Attrs};
pub use ctx::OpCtx;
pub use registry::{OpFactory, OpRegistry};
pub use typeinfo::TypeInfo;

use crate::error::Result;
use crate::kernels::pointwise::Pointwise;
use crate::tensor::Tensor;

/// How many inputs an op takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arity {
    pub min: usize,
    /// `None` for variadic ops (concat, create_view).
    pub max: Option<usize>,
}

impl Arity {
    pub const fn exactly(n: usize) -> Arity {
        Arity { min: n, max: Some(n) }
    }
    pub const fn at_least(n: usize) -> Arity {
        Arity { min: n, max: None }
    }
    pub fn accepts(self, n: usize) -> bool {
        n >= self.min && self.max.is_none_or(|m| n <= m)
    }
}

impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.max {
            Some(m) if m == self.min => write!(f, "{m}"),
            Some(m) => write!(f, "{} to {m}", self.min),
            None => write!(f, "at least {}", self.min),
        }
    }
}

/// Whether a declared view always aliases its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ViewKind {
    /// The output is always a view (create_view, transpose).
    Must,
    /// The output is a view when the layout allows, else a copy (reshape).
    May,
}

/// One way to run a pure op in place: `op` takes the pure op's inputs in
/// the order `inputs` (`op`'s input `k` is the pure op's input `inputs[k]`),
/// followed by the pure op's remaining inputs unchanged (so variadic ops list
/// only what they reorder), and destroys what its destroy_map says.
#[derive(Clone)]
pub struct InplaceVariant {
    pub op: Arc<dyn Op>,
    pub inputs: Vec<usize>,
}

impl InplaceVariant {
    /// The variant's input order for a node with `n` inputs, or `None` when
    /// `inputs` is not a permutation of a prefix of `0..n`.
    pub fn order(&self, n: usize) -> Option<Vec<usize>> {
        let k = self.inputs.len();
        let mut seen = vec![false; k];
        if k > n
            || self
                .inputs
                .iter()
                .any(|&i| i >= k || std::mem::replace(&mut seen[i], true))
        {
            return None;
        }
        Some(self.inputs.iter().copied().chain(k..n).collect())
    }
}

/// A tensor operation. Implement it to test your own kernels, and register
/// a factory by name in an [`OpRegistry`].
pub trait Op: Send + Sync {
    /// The op's name in the graph format.
    fn name(&self) -> &str;

    fn arity(&self) -> Arity;

    fn num_outputs(&self) -> usize {
        1
    }

    /// Output dtypes and (possibly partial) shapes from the inputs'.
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>>;

    /// Computes the outputs. Allocate outputs through `ctx` so that
    /// pre-allocated buffers and the allocation limit are honoured.
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>>;

    /// `(output, input)` pairs: the output shares the input's buffer.
    fn view_map(&self) -> Vec<(usize, usize)> {
        Vec::new()
    }

    /// `(output, input)` pairs: the op overwrites the input, and the output
    /// is the overwritten buffer.
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        Vec::new()
    }

    /// Whether declared views always alias.
    fn view_kind(&self) -> ViewKind {
        ViewKind::Must
    }

    /// False when this op's view outputs cannot be written (a broadcast
    /// view repeats elements), so the in-place pass never destroys them.
    fn writable_views(&self) -> bool {
        true
    }

    /// The ways this op can run in place, most preferred first.
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        Vec::new()
    }

    /// The pure op an in-place op stands for (same inputs, no destroy).
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        None
    }

    /// True for ops that are views by design and must not be blamed by the
    /// non-in-place validation (CreateView).
    fn exempt_from_inplace_check(&self) -> bool {
        false
    }

    /// True when a destroyer may read the destroyed variable itself on
    /// another input (elementwise `x += x` is well defined).
    fn tolerates_same_input(&self) -> bool {
        false
    }

    /// For an elementwise op that overwrites input 0 with `f(input 0)` or
    /// `f(input 0, input 1)`: which `f`, so that a run of such ops passing
    /// one buffer along can sweep it once, a tile at a time, instead of once
    /// per op (`exec::fuse`). `None`, the default, keeps an op out of such
    /// runs; an op that answers must compute exactly what
    /// [`Pointwise`] names, element by element.
    fn pointwise(&self) -> Option<Pointwise> {
        None
    }

    /// Ops that run graphs of their own (`if`, in the graph layer's
    /// `control` module) return themselves, so the executor can run those
    /// graphs under its own listeners. `None`, the default, for every other op.
    fn as_control(&self) -> Option<&dyn std::any::Any> {
        None
    }

    /// Attributes, as the graph format writes them.
    fn attrs(&self) -> Attrs {
        Attrs::default()
    }
}

impl fmt::Debug for dyn Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Op({})", self.name())
    }
}

/// Checks the input count against the arity.
pub fn check_arity(op: &dyn Op, n: usize) -> Result<()> {
    if op.arity().accepts(n) {
        Ok(())
    } else {
        crate::error::arity_err(format!("op '{}' takes {} inputs, got {n}", op.name(), op.arity()))
    }
}
