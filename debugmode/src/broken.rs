//! Ops with the defects only DebugMode can see, each modelled on a real
//! kernel bug and each with a correct twin. All take and return f32 and
//! 1-D inputs.
//!
//! | broken op               | defect                                                        | finding                 |
//! |-------------------------|---------------------------------------------------------------|-------------------------|
//! | `broken_scale6`         | pure op that does `x *= 2; return x * 3`                      | `value_mismatch` (and the listeners' `destroyed_input`) |
//! | `broken_stencil`        | its in-place variant reads neighbours it already overwrote    | `bad_rewrite`, `value_mismatch` |
//! | `broken_accumulate_out` | accumulates into its output buffer instead of assigning       | `uninitialized_read`    |
//! | `broken_c_order_out`    | writes its output as if it were C-contiguous                  | `preallocated_output`   |
//! | `broken_oversize_out`   | asks for one element more than its output and returns a slice | `preallocated_output` (`wrong_size`) |
//! | `broken_stash`/`broken_take` | `take` reads what `stash` left in shared state           | `order_dependent`       |
//! | `broken_jitter`         | adds 0.25 on one call and 0.26 on the next                    | `nondeterministic`      |
//! | `broken_memory_order`   | weights the memory-order slice of its input as if C order     | `layout_dependent`      |
//! | `broken_past_view`      | reads one element past the end of its input's view            | `layout_dependent` (reads outside the view) |
//! | `broken_scratch`        | declared pure, computes in its input's buffer and restores it  | `scratch_write`        |
//! | `broken_thread_sum`     | f32 partial sums chunked by the pool's thread count           | `thread_dependent`      |
//! | `broken_f32_only`       | infers any dtype, its kernel reads f32 (panics on f64)        | `op_panic`              |
//!
//! The twins are `fixed_*`. In a run where every op sees the same layouts,
//! the same thread count and clean buffers, the last six are wrong the
//! same way in both runs: only the checks named find them.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD};
use vigil_engine::error::op_err;
use vigil_engine::ops::{InplaceVariant, Op, OpCtx, OpRegistry, TypeInfo};
use vigil_engine::{DType, Layout, Result, Tensor};
use vigil_listeners::broken::name;

fn f32_1d(op: &str, inputs: &[TypeInfo]) -> Result<()> {
    match inputs
        .iter()
        .find(|t| t.dtype != DType::F32 || t.rank() != Some(1))
    {
        Some(t) => op_err(format!(
            "op '{op}' takes 1-D f32 inputs, got {} {}",
            t.dtype,
            t.shape_string()
        )),
        None => Ok(()),
    }
}

fn values(t: &Tensor) -> Result<Vec<f32>> {
    t.read(|v: ArrayViewD<'_, f32>| v.iter().copied().collect())
}

fn store(t: &Tensor, vals: &[f32]) -> Result<()> {
    t.write(|mut v: ArrayViewMutD<'_, f32>| v.iter_mut().zip(vals).for_each(|(a, &b)| *a = b))
}

/// Declares the struct of a broken op and its fixed twin.
macro_rules! unary_op {
    ($ty:ident, $what:literal) => {
        pub struct $ty {
            pub fixed: bool,
            name: String,
        }
        impl $ty {
            pub fn new(fixed: bool) -> Self {
                $ty {
                    fixed,
                    name: name(fixed, $what),
                }
            }
        }
    };
}

unary_op!(Scale6, "scale6");
impl Op for Scale6 {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = if self.fixed {
            i[0].deep_copy()?
        } else {
            i[0].clone()
        };
        let doubled: Vec<f32> = values(&x)?.iter().map(|v| v * 2.0).collect();
        store(&x, &doubled)?;
        let out = ctx.output(0, DType::F32, x.shape())?;
        store(&out, &doubled.iter().map(|v| v * 3.0).collect::<Vec<_>>())?;
        Ok(vec![out])
    }
}

/// `out[i] = x[i-1] + x[i] + x[i+1]` (zero outside). The in-place variant
/// of the broken one walks left to right and reads `x[i-1]` after it has
/// already overwritten it.
pub struct Stencil {
    pub fixed: bool,
    pub inplace: bool,
    name: String,
}

impl Stencil {
    pub fn new(fixed: bool, inplace: bool) -> Self {
        let base = name(fixed, "stencil");
        Stencil {
            fixed,
            inplace,
            name: if inplace { format!("{base}_inplace") } else { base },
        }
    }
}

fn stencil(x: &[f32]) -> Vec<f32> {
    let at = |i: isize| {
        if i < 0 || i as usize >= x.len() {
            0.0
        } else {
            x[i as usize]
        }
    };
    (0..x.len() as isize)
        .map(|i| at(i - 1) + at(i) + at(i + 1))
        .collect()
}

impl Op for Stencil {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &i[0];
        if !self.inplace {
            let out = ctx.output(0, DType::F32, x.shape())?;
            store(&out, &stencil(&values(x)?))?;
            return Ok(vec![out]);
        }
        if self.fixed {
            store(x, &stencil(&values(x)?))?;
        } else {
            x.write(|mut v: ArrayViewMutD<'_, f32>| {
                let n = v.len();
                for k in 0..n {
                    let left = if k > 0 { v[[k - 1]] } else { 0.0 };
                    let right = if k + 1 < n { v[[k + 1]] } else { 0.0 };
                    v[[k]] += left + right;
                }
            })?;
        }
        Ok(vec![x.clone()])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        if self.inplace {
            vec![(0, 0)]
        } else {
            Vec::new()
        }
    }
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        if self.inplace {
            return Vec::new();
        }
        vec![InplaceVariant {
            op: Arc::new(Stencil::new(self.fixed, true)),
            inputs: vec![0],
        }]
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace
            .then(|| Arc::new(Stencil::new(self.fixed, false)) as Arc<dyn Op>)
    }
}

unary_op!(AccumulateOut, "accumulate_out");
impl Op for AccumulateOut {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    /// `max(x, 0)`, summed into the output buffer (broken) or assigned.
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let r: Vec<f32> = values(&i[0])?.iter().map(|v| v.max(0.0)).collect();
        let out = ctx.output(0, DType::F32, i[0].shape())?;
        let fixed = self.fixed;
        out.write(|mut v: ArrayViewMutD<'_, f32>| {
            v.iter_mut()
                .zip(&r)
                .for_each(|(o, &x)| if fixed { *o = x } else { *o += x })
        })?;
        Ok(vec![out])
    }
}

unary_op!(COrderOut, "c_order_out");
impl Op for COrderOut {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    /// `x + 1`; the broken one writes the output's buffer from its start,
    /// ignoring the output's strides and offset.
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let r: Vec<f32> = values(&i[0])?.iter().map(|v| v + 1.0).collect();
        let out = ctx.output(0, DType::F32, i[0].shape())?;
        if self.fixed {
            store(&out, &r)?;
        } else {
            let raw = out.with_layout(Layout::contiguous(&[r.len().min(out.data_size())]))?;
            store(&raw, &r)?;
        }
        Ok(vec![out])
    }
}

unary_op!(OversizeOut, "oversize_out");
impl Op for OversizeOut {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    /// `2x`; the broken one asks for an output one element longer than its
    /// result (an off-by-one in the size) and returns the first `n`, so a
    /// caller's buffer of the wrong size is taken and written.
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let r: Vec<f32> = values(&i[0])?.iter().map(|v| 2.0 * v).collect();
        let n = r.len();
        let out = ctx.output(0, DType::F32, &[n + usize::from(!self.fixed)])?;
        store(&out, &r)?;
        if self.fixed {
            return Ok(vec![out]);
        }
        Ok(vec![out.with_layout(Layout::contiguous(&[n]))?])
    }
}

unary_op!(Jitter, "jitter");
impl Op for Jitter {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    /// `x + 0.25`; the broken one adds 0.26 on every other call.
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        // Only the broken op counts its calls: a fixed twin running in a
        // parallel case must not shift the broken one's alternation.
        let odd = !self.fixed && JITTER.fetch_add(1, Ordering::Relaxed) % 2 == 1;
        let add = if odd { 0.26 } else { 0.25 };
        let r: Vec<f32> = values(&i[0])?.iter().map(|v| v + add).collect();
        let out = ctx.output(0, DType::F32, i[0].shape())?;
        store(&out, &r)?;
        Ok(vec![out])
    }
}

static JITTER: AtomicU64 = AtomicU64::new(0);

unary_op!(MemoryOrder, "memory_order");
impl Op for MemoryOrder {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    /// `out[i] = (i + 1) * x[i]`; the broken one takes the input's
    /// elements in memory order when they are contiguous in any order
    /// (a reversed view then comes back to front).
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let fixed = self.fixed;
        let x: Vec<f32> = i[0].read(|v: ArrayViewD<'_, f32>| match v.as_slice_memory_order() {
            Some(s) if !fixed => s.to_vec(),
            _ => v.iter().copied().collect(),
        })?;
        let r: Vec<f32> = x.iter().enumerate().map(|(k, v)| (k + 1) as f32 * v).collect();
        let out = ctx.output(0, DType::F32, i[0].shape())?;
        store(&out, &r)?;
        Ok(vec![out])
    }
}

unary_op!(PastView, "past_view");
impl Op for PastView {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    /// `out[i] = x[i] + x[i + 1]`, with 0 past the last element; the broken
    /// one's loop bound is one too far, so for the last element it reads
    /// the next element of the buffer when there is one.
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &i[0];
        let n = x.shape()[0];
        let stride = x.strides()[0];
        let reach = x.offset() as isize + n as isize * stride;
        let past = !self.fixed && n > 0 && reach >= 0 && (reach as usize) < x.data_size();
        let wide = if past {
            x.with_layout(Layout::new(vec![n + 1], vec![stride], x.offset()))?
        } else {
            x.clone()
        };
        let mut v = values(&wide)?;
        if !past {
            v.push(0.0);
        }
        let r: Vec<f32> = (0..n).map(|k| v[k] + v[k + 1]).collect();
        let out = ctx.output(0, DType::F32, x.shape())?;
        store(&out, &r)?;
        Ok(vec![out])
    }
}

unary_op!(Scratch, "scratch");
impl Op for Scratch {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    /// `6x`, declared pure; the broken one doubles its input in place,
    /// computes `3 * that`, and halves the input back before returning.
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &i[0];
        let out = ctx.output(0, DType::F32, x.shape())?;
        if self.fixed {
            store(&out, &values(x)?.iter().map(|v| 6.0 * v).collect::<Vec<_>>())?;
            return Ok(vec![out]);
        }
        x.write(|mut v: ArrayViewMutD<'_, f32>| v.mapv_inplace(|e| 2.0 * e))?;
        store(&out, &values(x)?.iter().map(|v| 3.0 * v).collect::<Vec<_>>())?;
        x.write(|mut v: ArrayViewMutD<'_, f32>| v.mapv_inplace(|e| 0.5 * e))?;
        Ok(vec![out])
    }
}

unary_op!(ThreadSum, "thread_sum");
impl Op for ThreadSum {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    /// `x - sum(x)` with the f32 sum taken in partial sums: one per thread
    /// of the pool (broken), or one per 4 elements (fixed), whatever the
    /// pool.
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let v = values(&i[0])?;
        let chunk = if self.fixed {
            4
        } else {
            v.len().div_ceil(rayon::current_num_threads()).max(1)
        };
        let sum: f32 = v.chunks(chunk).map(|c| c.iter().sum::<f32>()).sum();
        let out = ctx.output(0, DType::F32, i[0].shape())?;
        store(&out, &v.iter().map(|x| x - sum).collect::<Vec<_>>())?;
        Ok(vec![out])
    }
}

unary_op!(F32Only, "f32_only");
impl Op for F32Only {
    /// Any float in, the same type out; the broken kernel reads f32 and
    /// panics on anything else (an `expect` on the read), the fixed one
    /// computes in the input's type.
    fn name(&self) -> &str {
        &self.name
    }
    fn arity(&self) -> vigil_engine::ops::Arity {
        vigil_engine::ops::Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        vigil_engine::ops::check_arity(self, inputs.len())?;
        Ok(vec![inputs[0].clone()])
    }
    /// `2x`.
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &i[0];
        let out = ctx.output(0, x.dtype(), x.shape())?;
        if self.fixed {
            let doubled: Vec<f64> = x.to_f64_vec()?.iter().map(|v| 2.0 * v).collect();
            out.assign(&Tensor::from_vec(x.shape(), doubled)?.cast(x.dtype())?)?;
        } else {
            let v = values(x).expect("an f32 input");
            store(&out, &v.iter().map(|v| 2.0 * v).collect::<Vec<_>>())?;
        }
        Ok(vec![out])
    }
}

thread_local! {
    static STASH: Cell<f32> = const { Cell::new(0.0) };
}

unary_op!(Stash, "stash");
impl Op for Stash {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    /// A copy of `x`; the broken one also leaves `sum(x)` in shared state.
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let v = values(&i[0])?;
        if !self.fixed {
            STASH.with(|s| s.set(v.iter().sum()));
        }
        let out = ctx.output(0, DType::F32, i[0].shape())?;
        store(&out, &v)?;
        Ok(vec![out])
    }
}

unary_op!(Take, "take");
impl Op for Take {
    vigil_listeners::corpus_unary_basics!(f32_1d);
    /// `y + stash` (the broken one reads and clears the shared state; the
    /// fixed one adds nothing).
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let add = if self.fixed {
            0.0
        } else {
            STASH.with(|s| s.replace(0.0))
        };
        let v: Vec<f32> = values(&i[0])?.iter().map(|y| y + add).collect();
        let out = ctx.output(0, DType::F32, i[0].shape())?;
        store(&out, &v)?;
        Ok(vec![out])
    }
}

/// Every op of this corpus, broken and fixed.
pub fn ops() -> Vec<Arc<dyn Op>> {
    let mut v: Vec<Arc<dyn Op>> = Vec::new();
    for fixed in [false, true] {
        v.push(Arc::new(Scale6::new(fixed)));
        v.push(Arc::new(Stencil::new(fixed, false)));
        v.push(Arc::new(Stencil::new(fixed, true)));
        v.push(Arc::new(AccumulateOut::new(fixed)));
        v.push(Arc::new(COrderOut::new(fixed)));
        v.push(Arc::new(OversizeOut::new(fixed)));
        v.push(Arc::new(Stash::new(fixed)));
        v.push(Arc::new(Take::new(fixed)));
        v.push(Arc::new(Jitter::new(fixed)));
        v.push(Arc::new(MemoryOrder::new(fixed)));
        v.push(Arc::new(PastView::new(fixed)));
        v.push(Arc::new(Scratch::new(fixed)));
        v.push(Arc::new(ThreadSum::new(fixed)));
        v.push(Arc::new(F32Only::new(fixed)));
    }
    v
}

/// Registers the corpus into `r`.
pub fn register(r: &mut OpRegistry) {
    for op in ops() {
        r.register_op(op);
    }
}
