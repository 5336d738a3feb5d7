//! Samples of an op's inputs and attributes, as proptest strategies, and
//! the one-node graph each becomes.
//!
//! The dtypes come from the op's `infer` (the signatures it accepts, probed
//! once), the number of inputs from its arity. Every input derives its
//! shape from one base shape (rank 0-4, dimensions 0-3, so zero-size and
//! size-1 dimensions come up): the same shape, some dimensions set to 1 or
//! leading ones dropped (broadcasting), or a shape of its own. Each input
//! is laid out as a view: plain, transposed, reversed (negative strides),
//! at an offset inside a larger buffer whose guard bands hold poison, or
//! broadcast (stride 0); an input may be the previous one again (the same
//! tensor twice). Proptest shrinks toward the first choice of each: the
//! base shape's dimensions toward 0 and fewer of them, plain views, the
//! same shape, distinct inputs, fewer inputs.

use std::collections::HashMap;

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, ValueTree};
use proptest::test_runner::TestRunner;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vigil_engine::graph::{Graph, GraphBuilder, Sym};
use vigil_engine::ops::{Attrs, Op, OpRegistry, TypeInfo};
use vigil_engine::{DType, Tensor};

/// How an input tensor is laid out in its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Plain,
    /// Every axis reversed in memory (an F-order buffer, read through a
    /// permutation).
    Transposed,
    /// Negative strides.
    Reversed,
    /// Inside a larger buffer at an offset, the guard bands poisoned.
    Offset,
    /// Axis 0 broadcast from length 1 (stride 0).
    Broadcast,
}

/// How an input's shape derives from the sample's base shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapeOf {
    Base,
    /// The base with the dimensions of set bits made 1.
    Ones(u8),
    /// The base without its first `n` dimensions.
    DropLeading(usize),
    /// One dimension: the base's dimension `i` (a per-channel vector).
    Axis(usize),
    Own(Vec<usize>),
}

/// One input of a sample.
#[derive(Clone, Debug)]
pub struct Input {
    pub dtype: DType,
    pub shape: ShapeOf,
    pub view: View,
    /// This input is the previous one again (same dtype, shape and buffer).
    pub repeat: bool,
}

/// One sample: what the op is made with and what it is called on.
#[derive(Clone, Debug)]
pub struct Sample {
    pub attrs: Attrs,
    pub base: Vec<usize>,
    pub inputs: Vec<Input>,
    /// The inputs go through `copy` nodes, so the in-place pass can run
    /// the op's in-place variants.
    pub copied: bool,
    /// Seeds the values.
    pub values: u64,
}

impl Sample {
    /// The shape of input `k`.
    pub fn shape(&self, k: usize) -> Vec<usize> {
        match &self.inputs[k].shape {
            ShapeOf::Base => self.base.clone(),
            ShapeOf::Ones(bits) => self
                .base
                .iter()
                .enumerate()
                .map(|(i, &d)| if (bits >> i) & 1 == 1 { 1 } else { d })
                .collect(),
            ShapeOf::DropLeading(n) => self.base[(*n).min(self.base.len())..].to_vec(),
            ShapeOf::Axis(i) => vec![self.base.get(*i).copied().unwrap_or(1)],
            ShapeOf::Own(s) => s.clone(),
        }
    }

    /// The input whose tensor input `k` is (itself unless repeated).
    pub fn source(&self, k: usize) -> usize {
        let mut s = k;
        while s > 0 && self.inputs[s].repeat {
            s -= 1;
        }
        s
    }

    /// One line: attrs, and per input its dtype, shape and view.
    pub fn describe(&self) -> String {
        let inputs: Vec<String> = (0..self.inputs.len())
            .map(|k| {
                let i = &self.inputs[k];
                if i.repeat {
                    return format!("input {} again", self.source(k));
                }
                format!("{} {:?} {:?}", i.dtype, self.shape(k), i.view)
            })
            .collect();
        let attrs = if self.attrs.is_empty() {
            String::new()
        } else {
            format!(" attrs {}", serde_json::Value::Object(self.attrs.0.clone()))
        };
        format!(
            "[{}]{attrs}{}",
            inputs.join(", "),
            if self.copied { " (through copies)" } else { "" }
        )
    }
}

pub(super) const DTYPES: [DType; 7] = [
    DType::F32,
    DType::F64,
    DType::I64,
    DType::I32,
    DType::Bool,
    DType::I8,
    DType::U8,
];

/// A dimension: shrinks toward 0.
fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![1 => 0usize..=0, 3 => 1usize..=1, 3 => 2usize..=3].boxed()
}

fn view() -> impl Strategy<Value = View> {
    prop_oneof![
        4 => Just(View::Plain),
        1 => Just(View::Transposed),
        1 => Just(View::Reversed),
        1 => Just(View::Offset),
        1 => Just(View::Broadcast),
    ]
}

fn shape_of() -> impl Strategy<Value = ShapeOf> {
    prop_oneof![
        5 => Just(ShapeOf::Base),
        2 => any::<u8>().prop_map(ShapeOf::Ones),
        1 => (1usize..=2).prop_map(ShapeOf::DropLeading),
        1 => (0usize..=1).prop_map(ShapeOf::Axis),
        2 => prop::collection::vec(dim(), 0..=4).prop_map(ShapeOf::Own),
    ]
}

/// The samples of an op that accepts the dtype `signatures` (one list of
/// input dtypes each), with attributes from `attrs`.
///
/// With `tied` (one sample in four), inputs 2 and later take input 1's
/// shape, as the parameters of a normalization do.
pub fn samples(signatures: Vec<Vec<DType>>, attrs: BoxedStrategy<Attrs>) -> BoxedStrategy<Sample> {
    let n = signatures.iter().map(Vec::len).max().unwrap_or(0);
    let sig = prop::sample::select(signatures);
    (
        sig,
        attrs,
        prop::collection::vec(dim(), 0..=4),
        prop::collection::vec((shape_of(), view(), prop::bool::weighted(0.15)), n),
        prop::bool::weighted(0.25),
        any::<bool>(),
        any::<u64>().no_shrink(),
    )
        .prop_map(|(sig, attrs, base, per, tied, copied, values)| {
            let tie = per.get(1).map(|p| p.0.clone());
            Sample {
                attrs,
                base,
                inputs: sig
                    .iter()
                    .zip(per)
                    .enumerate()
                    .map(|(k, (&dtype, (shape, view, repeat)))| Input {
                        dtype,
                        shape: match &tie {
                            Some(t) if tied && k >= 2 => t.clone(),
                            _ => shape,
                        },
                        view,
                        repeat: repeat && k > 0,
                    })
                    .collect(),
                copied,
                values,
            }
        })
        .boxed()
}

/// The dtype signatures `op` accepts: each candidate (every input one
/// dtype; or f32 or i64 inputs with one of them i64 or bool; or int8 or
/// uint8 inputs with one of them f32) for each
/// input count the arity allows, kept when `infer` takes it for inputs
/// of unknown shape or of shape `[2, 3]` with any of `attrs`. All
/// uniform candidates when `infer` takes none (it may want other shapes).
pub fn signatures(
    registry: &OpRegistry,
    op: &str,
    attrs: &BoxedStrategy<Attrs>,
    runner: &mut TestRunner,
) -> Vec<Vec<DType>> {
    let mut made: Vec<std::sync::Arc<dyn Op>> = Vec::new();
    for _ in 0..8 {
        if let Ok(tree) = attrs.new_tree(runner) {
            if let Ok(o) = registry.make(op, &tree.current()) {
                made.push(o);
            }
        }
    }
    let Some(first) = made.first() else {
        return Vec::new();
    };
    let arity = first.arity();
    let max = arity.max.unwrap_or(arity.min.max(1) + 2);
    let mut all = Vec::new();
    let mut kept = Vec::new();
    for n in arity.min..=max.max(arity.min) {
        let mut candidates: Vec<Vec<DType>> = DTYPES.iter().map(|&d| vec![d; n]).collect();
        // Quantized ops take int8/uint8 data with one f32 scale.
        for (base, alts) in [
            (DType::F32, &[DType::I64, DType::Bool][..]),
            (DType::I64, &[DType::I64, DType::Bool][..]),
            (DType::I8, &[DType::F32][..]),
            (DType::U8, &[DType::F32][..]),
        ] {
            for k in 0..n {
                for &alt in alts {
                    let mut c = vec![base; n];
                    c[k] = alt;
                    if !candidates.contains(&c) {
                        candidates.push(c);
                    }
                }
            }
        }
        for c in candidates {
            let takes = |shape: Option<Vec<i64>>| {
                let types: Vec<TypeInfo> = c.iter().map(|&d| TypeInfo::new(d, shape.clone())).collect();
                made.iter()
                    .any(|o| crate::guard::catch(|| o.infer(&types).is_ok()).unwrap_or(true))
            };
            let uniform = c.iter().all(|&d| d == c[0]);
            if takes(None) || takes(Some(vec![2, 3])) || takes(Some(vec![1, 2, 3, 3])) {
                kept.push(c.clone());
            }
            if uniform {
                all.push(c);
            }
        }
    }
    if kept.is_empty() {
        all
    } else {
        kept
    }
}

/// A one-node graph and its feeds.
pub type Case = (Graph, HashMap<String, Tensor>);

/// The op's `infer` (or its factory) panicked on a sample.
pub struct InferPanic(pub String);

/// The one-node graph of `sample` and its feeds; `None` when the op
/// refuses the attributes or the inputs' types. With `grad`, float
/// inputs are parameters and the graph's output is the loss
/// `sum(output 0 * weights)` for the gradient check.
pub fn build(
    registry: &OpRegistry,
    op: &str,
    sample: &Sample,
    grad: bool,
) -> Result<Option<Case>, InferPanic> {
    let made = match crate::guard::catch(|| registry.make(op, &sample.attrs)) {
        Ok(Ok(m)) => m,
        Ok(Err(_)) => return Ok(None),
        Err(p) => return Err(InferPanic(p)),
    };
    let destroys = !made.destroy_map().is_empty();
    let b = GraphBuilder::with_registry("opcheck", registry.clone());
    let mut syms: Vec<Sym> = Vec::new();
    let mut feeds = HashMap::new();
    let mut rng = ChaCha8Rng::seed_from_u64(sample.values);
    for k in 0..sample.inputs.len() {
        let input = &sample.inputs[k];
        if input.repeat {
            let again = syms[k - 1].clone();
            syms.push(again);
            continue;
        }
        let name = format!("x{k}");
        let shape = sample.shape(k);
        let Ok(t) = tensor(input.dtype, &shape, input.view, grad, &mut rng) else {
            return Ok(None);
        };
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let x = if grad && input.dtype.is_float() {
            b.parameter(&name, t.clone())
        } else if destroys {
            // An in-place op may destroy its input when it is not a copy.
            b.mutable_input(&name, input.dtype, &dims)
        } else {
            b.input(&name, input.dtype, &dims)
        };
        feeds.insert(name, t);
        let x = if sample.copied && !grad {
            match x.copy() {
                Ok(c) => c,
                Err(_) => return Ok(None),
            }
        } else {
            x
        };
        syms.push(x);
    }
    let refs: Vec<&Sym> = syms.iter().collect();
    // `infer` is the op's code too: a panic there is a finding.
    let built = crate::guard::catch(|| {
        let outs = b.apply_named("op", op, &refs, sample.attrs.clone()).ok()?;
        if !grad {
            return b.build(&outs.iter().collect::<Vec<_>>()).ok();
        }
        let out = outs.first()?;
        let ty = out.ty();
        let shape = ty.static_shape()?;
        // Finite differences see nothing through a rounding to f16.
        if !matches!(ty.dtype, DType::F32 | DType::F64) {
            return None;
        }
        let n: usize = shape.iter().product();
        // An empty output or input: the loss is a sum or mean of nothing,
        // no function of the inputs to differentiate.
        if n == 0 || (0..sample.inputs.len()).any(|k| sample.shape(k).contains(&0)) {
            return None;
        }
        let w: Vec<f64> = (0..n).map(|i| 0.5 + ((i * 7 + 3) % 11) as f64 / 10.0).collect();
        let w = b.constant("weights", Tensor::from_vec(&shape, w).ok()?.cast(ty.dtype).ok()?);
        let loss = out.mul(&w).ok()?.sum(None).ok()?;
        b.build(&[&loss]).ok()
    });
    match built {
        Ok(Some(g)) => Ok(Some((g, feeds))),
        Ok(None) => Ok(None),
        Err(p) => Err(InferPanic(p)),
    }
}

/// Random values of `shape` laid out as `view` says: small multiples of
/// 0.01 for floats (in [0.5, 2] for a gradient check, away from kinks and
/// outside no op's domain), -5..=5 for integers (0..=10 unsigned).
fn tensor(
    dtype: DType,
    shape: &[usize],
    view: View,
    grad: bool,
    rng: &mut ChaCha8Rng,
) -> vigil_engine::Result<Tensor> {
    let mut values = |shape: &[usize]| -> vigil_engine::Result<Tensor> {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n)
            .map(|_| match dtype {
                DType::Bool => f64::from(u8::from(rng.gen_bool(0.5))),
                d if d.is_float() && grad => rng.gen_range(0.5..2.0),
                d if d.is_float() => (rng.gen_range(-200..=200) as f64) / 100.0,
                d if d.is_unsigned() => rng.gen_range(0..=10) as f64,
                _ => rng.gen_range(-5..=5) as f64,
            })
            .collect();
        Tensor::from_vec(shape, v)?.cast(dtype)
    };
    match view {
        View::Transposed if shape.len() >= 2 => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            values(&rev)?.transpose(None)
        }
        View::Reversed => crate::layouts::relaid(&values(shape)?, "reversed"),
        View::Offset => crate::layouts::relaid(&values(shape)?, "guarded"),
        View::Broadcast if !shape.is_empty() => {
            let mut one = shape.to_vec();
            one[0] = 1;
            values(&one)?.broadcast_to(shape)
        }
        _ => values(shape),
    }
}
