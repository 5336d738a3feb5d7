//! What an op sees of the executor while it computes.

use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Per-call context: the node, and the output buffers the caller supplied.
pub struct OpCtx<'a> {
    node: &'a str,
    prealloc: Vec<Option<Tensor>>,
    channels_last: bool,
}

impl<'a> OpCtx<'a> {
    pub fn new(node: &'a str) -> OpCtx<'a> {
        OpCtx {
            node,
            prealloc: Vec::new(),
            channels_last: false,
        }
    }

    /// A context whose output `i` is written into `prealloc[i]` when given.
    pub fn with_prealloc(node: &'a str, prealloc: Vec<Option<Tensor>>) -> OpCtx<'a> {
        OpCtx {
            node,
            prealloc,
            channels_last: false,
        }
    }

    /// This context with the executor's layout hint for the node's output
    /// (see [`OpCtx::prefers_channels_last`]).
    pub fn with_channels_last(self, channels_last: bool) -> OpCtx<'a> {
        OpCtx {
            channels_last,
            ..self
        }
    }

    /// Whether the node's image output is best laid out channels-last: the
    /// executor found a depthwise conv among its readers (through
    /// elementwise nodes), which reads channel vectors. A hint: an op may
    /// lay its output out as it likes, and every op reads any layout.
    pub fn prefers_channels_last(&self) -> bool {
        self.channels_last
    }

    pub fn node(&self) -> &str {
        self.node
    }

    /// A seed for random ops that differs per node and is stable across runs.
    pub fn node_seed(&self) -> u64 {
        fnv1a(self.node.as_bytes())
    }

    /// The buffer for output `i`: the caller's pre-allocated one when it has
    /// this dtype and shape, else a fresh one. Its contents are unspecified;
    /// the op must overwrite every element.
    ///
    /// An op's fresh outputs come from here, never from a buffer the op
    /// keeps between calls: the next call would overwrite a result still in
    /// use (the listeners report it as `undeclared_alias`).
    pub fn output(&mut self, i: usize, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        if let Some(t) = self.prealloc.get_mut(i).and_then(Option::take) {
            if t.dtype() == dtype && t.shape() == shape && !t.layout().has_self_overlap() {
                return Ok(t);
            }
            return Err(crate::error::Error::PreallocRefused {
                node: None,
                output: i,
                msg: format!(
                    "is {} {:?}{}, the op needs {dtype} {shape:?}",
                    t.dtype(),
                    t.shape(),
                    if t.layout().has_self_overlap() {
                        " with overlapping elements"
                    } else {
                        ""
                    }
                ),
            });
        }
        Tensor::uninit(dtype, shape)
    }

    /// Like [`OpCtx::output`] with `like`'s shape, a fresh buffer laid out
    /// as `like` ([`Tensor::uninit_like`]): an elementwise op keeps a
    /// channels-last input channels-last, so the ops after it walk memory
    /// in one order.
    pub fn output_like(&mut self, i: usize, dtype: DType, like: &Tensor) -> Result<Tensor> {
        if self.preallocated(i) {
            return self.output(i, dtype, like.shape());
        }
        Tensor::uninit_like(dtype, like)
    }

    /// Like [`OpCtx::output`], a fresh buffer with its axes in memory in
    /// `order` ([`Tensor::uninit_in_order`]).
    pub fn output_in_order(
        &mut self,
        i: usize,
        dtype: DType,
        shape: &[usize],
        order: &[usize],
    ) -> Result<Tensor> {
        if self.preallocated(i) {
            return self.output(i, dtype, shape);
        }
        Tensor::uninit_in_order(dtype, shape, order)
    }

    /// Whether the caller supplied output `i`'s buffer ([`OpCtx::output`]
    /// then decides what the op gets).
    fn preallocated(&self, i: usize) -> bool {
        self.prealloc.get(i).is_some_and(Option::is_some)
    }

    /// Like [`OpCtx::output`], filled with zeros.
    pub fn output_zeroed(&mut self, i: usize, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        let t = self.output(i, dtype, shape)?;
        crate::dispatch_all!(dtype, T => t.write(|mut v: ndarray::ArrayViewMutD<'_, T>| v.fill(T::default()))?);
        Ok(t)
    }
}

/// A small stable 64-bit hash (FNV-1a), for seeds.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}
