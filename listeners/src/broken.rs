//! Ops with known memory defects, each with a correct twin, to show that
//! the listeners catch each defect with exactly the intended finding and
//! stay quiet on correct code. All take and return f32.
//!
//! | broken op                | defect                                          | finding                     | twin                |
//! |--------------------------|-------------------------------------------------|-----------------------------|---------------------|
//! | `broken_accumulate`      | `c = a; c += b` writes input 0, no destroy_map  | `destroyed_input`           | `fixed_accumulate`  |
//! | `broken_identity`        | returns its input, no view_map                  | `undeclared_view`           | `fixed_identity`    |
//! | `broken_first_row`       | returns a slice of its input, no view_map       | `undeclared_view`           | `fixed_first_row`   |
//! | `broken_split`           | halves of one buffer overlapping by one element | `aliased_outputs`           | `fixed_split`       |
//! | `broken_increment`       | in-place `x += 1` writing one element past `x`  | `out_of_view_write`         | `fixed_increment`   |
//! | `broken_lazy_scale`      | declares a destroy, never writes                | `declared_destroy_unused`   | `fixed_lazy_scale`  |
//! | `broken_view`            | declares a must-view, returns a copy            | `declared_view_not_aliased` | `fixed_view`        |
//! | `broken_safe_div`        | "safe" division without the zero guard          | `non_finite`                | `fixed_safe_div`    |
//! | `broken_row_sum`         | sums a row view, stores one element past its end | `out_of_view_write`        | `fixed_row_sum`     |
//! | `broken_cached_double`   | returns a workspace it keeps across calls       | `undeclared_alias`          | `fixed_cached_double` |

use std::cell::RefCell;
use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD, Zip};
use vigil_engine::error::op_err;
use vigil_engine::ops::{check_arity, Arity, Op, OpCtx, OpRegistry, TypeInfo};
use vigil_engine::{DType, IndexSpec, Layout, Result, Scalar, Tensor};

use crate::finding::Kind;

/// The `name`, `arity` and `infer` of a corpus op with one input, checked
/// by `$check(&self.name, inputs)`, and one output of the input's type.
/// Shared with DebugMode's corpus.
#[doc(hidden)]
#[macro_export]
macro_rules! corpus_unary_basics {
    ($check:path) => {
        fn name(&self) -> &str {
            &self.name
        }
        fn arity(&self) -> vigil_engine::ops::Arity {
            vigil_engine::ops::Arity::exactly(1)
        }
        fn infer(
            &self,
            inputs: &[vigil_engine::ops::TypeInfo],
        ) -> vigil_engine::Result<Vec<vigil_engine::ops::TypeInfo>> {
            vigil_engine::ops::check_arity(self, inputs.len())?;
            $check(&self.name, inputs)?;
            Ok(vec![inputs[0].clone()])
        }
    };
}

fn need_f32(op: &str, inputs: &[TypeInfo]) -> Result<()> {
    match inputs.iter().find(|t| t.dtype != DType::F32) {
        Some(t) => op_err(format!("op '{op}' takes f32 inputs, got {}", t.dtype)),
        None => Ok(()),
    }
}

/// The name of a corpus op: `broken_<what>`, or `fixed_<what>` for its
/// twin. Shared with DebugMode's corpus, which names its ops the same way.
pub fn name(fixed: bool, what: &str) -> String {
    format!("{}_{what}", if fixed { "fixed" } else { "broken" })
}

/// `x[i] += y[i]` (same shapes).
fn add_into(x: &Tensor, y: &Tensor) -> Result<()> {
    y.read(|yv: ArrayViewD<'_, f32>| {
        x.write(|mut xv: ArrayViewMutD<'_, f32>| xv.zip_mut_with(&yv, |a, &b| *a += b))
    })?
}

/// `a + b` into a fresh output. The broken one does `c = a; c += b` (the
/// alias bug) and copies `c` out, so input 0 is overwritten.
pub struct Accumulate {
    pub fixed: bool,
    name: String,
}

impl Accumulate {
    pub fn new(fixed: bool) -> Self {
        Accumulate {
            fixed,
            name: name(fixed, "accumulate"),
        }
    }
}

impl Op for Accumulate {
    fn name(&self) -> &str {
        &self.name
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        need_f32(&self.name, inputs)?;
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let (a, b) = (&inputs[0], &inputs[1]);
        if a.shape() != b.shape() {
            return op_err(format!("shapes {:?} and {:?} differ", a.shape(), b.shape()));
        }
        let c = if self.fixed { a.deep_copy()? } else { a.clone() };
        add_into(&c, b)?;
        let out = ctx.output(0, DType::F32, a.shape())?;
        out.assign(&c)?;
        Ok(vec![out])
    }
}

/// Returns its input. The broken one does not declare the view.
pub struct Identity {
    pub fixed: bool,
    name: String,
}

impl Identity {
    pub fn new(fixed: bool) -> Self {
        Identity {
            fixed,
            name: name(fixed, "identity"),
        }
    }
}

impl Op for Identity {
    corpus_unary_basics!(need_f32);
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].clone()])
    }
    fn view_map(&self) -> Vec<(usize, usize)> {
        if self.fixed {
            vec![(0, 0)]
        } else {
            Vec::new()
        }
    }
}

/// Row 0 of a matrix, as a view. The broken one does not declare it.
pub struct FirstRow {
    pub fixed: bool,
    name: String,
}

impl FirstRow {
    pub fn new(fixed: bool) -> Self {
        FirstRow {
            fixed,
            name: name(fixed, "first_row"),
        }
    }
}

impl Op for FirstRow {
    fn name(&self) -> &str {
        &self.name
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        need_f32(&self.name, inputs)?;
        match &inputs[0].shape {
            Some(s) if s.len() == 2 => Ok(vec![TypeInfo::new(DType::F32, Some(vec![s[1]]))]),
            Some(s) => op_err(format!("op '{}' takes a matrix, got rank {}", self.name, s.len())),
            None => Ok(vec![TypeInfo::unknown(DType::F32)]),
        }
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].slice(&[IndexSpec::Point(0)])?])
    }
    fn view_map(&self) -> Vec<(usize, usize)> {
        if self.fixed {
            vec![(0, 0)]
        } else {
            Vec::new()
        }
    }
}

/// A copy of a vector of even length, returned as its two halves (views of
/// one new buffer). The broken one starts the second half one element
/// early, so the halves overlap.
pub struct Split {
    pub fixed: bool,
    name: String,
}

impl Split {
    pub fn new(fixed: bool) -> Self {
        Split {
            fixed,
            name: name(fixed, "split"),
        }
    }
}

impl Op for Split {
    fn name(&self) -> &str {
        &self.name
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        need_f32(&self.name, inputs)?;
        let half = match &inputs[0].shape {
            Some(s) if s.len() == 1 && s[0] >= 0 && s[0] % 2 == 0 => s[0] / 2,
            Some(s) if s.len() == 1 && s[0] < 0 => -1,
            _ => return op_err(format!("op '{}' takes a vector of even length", self.name)),
        };
        let t = TypeInfo::new(DType::F32, Some(vec![half]));
        Ok(vec![t.clone(), t])
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let n = inputs[0].size() as i64;
        if inputs[0].ndim() != 1 || n % 2 != 0 || n == 0 {
            return op_err(format!(
                "op '{}' takes a non-empty vector of even length",
                self.name
            ));
        }
        let h = n / 2;
        let buf = inputs[0].deep_copy()?;
        let second = if self.fixed { h } else { h - 1 };
        Ok(vec![
            buf.slice(&[IndexSpec::range(0, h, 1)])?,
            buf.slice(&[IndexSpec::range(second, second + h, 1)])?,
        ])
    }
}

/// `x += 1` in place on a vector (declared). The broken one's loop runs
/// one element too far, past the end of the view into the rest of its
/// buffer.
pub struct Increment {
    pub fixed: bool,
    name: String,
}

impl Increment {
    pub fn new(fixed: bool) -> Self {
        Increment {
            fixed,
            name: name(fixed, "increment"),
        }
    }
}

impl Op for Increment {
    corpus_unary_basics!(need_f32);
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        if x.ndim() != 1 {
            return op_err(format!("op '{}' takes a vector", self.name));
        }
        let n = if self.fixed { x.size() } else { x.size() + 1 };
        // The kernel's idea of the vector: n elements from the same start.
        let seen = x.with_layout(Layout::new(vec![n], x.strides().to_vec(), x.offset()))?;
        for i in 0..n {
            let v = seen.at(&[i])?.to_f64();
            seen.set_at(&[i], Scalar::F32(v as f32 + 1.0))?;
        }
        Ok(vec![x.clone()])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
}

/// `x *= 2` in place (declared). The broken one forgets to do it.
pub struct LazyScale {
    pub fixed: bool,
    name: String,
}

impl LazyScale {
    pub fn new(fixed: bool) -> Self {
        LazyScale {
            fixed,
            name: name(fixed, "lazy_scale"),
        }
    }
}

impl Op for LazyScale {
    corpus_unary_basics!(need_f32);
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if self.fixed {
            inputs[0].write(|mut v: ArrayViewMutD<'_, f32>| v.mapv_inplace(|x| x * 2.0))?;
        }
        Ok(vec![inputs[0].clone()])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
}

/// A declared must-view of its input. The broken one returns a copy (the
/// "view is a copy" defect of strided_slice).
pub struct View {
    pub fixed: bool,
    name: String,
}

impl View {
    pub fn new(fixed: bool) -> Self {
        View {
            fixed,
            name: name(fixed, "view"),
        }
    }
}

impl Op for View {
    corpus_unary_basics!(need_f32);
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if self.fixed {
            Ok(vec![inputs[0].clone()])
        } else {
            Ok(vec![inputs[0].deep_copy()?])
        }
    }
    fn view_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
}

/// `a / b`, 0 where `b == 0`. The broken one has no guard.
pub struct SafeDiv {
    pub fixed: bool,
    name: String,
}

impl SafeDiv {
    pub fn new(fixed: bool) -> Self {
        SafeDiv {
            fixed,
            name: name(fixed, "safe_div"),
        }
    }
}

impl Op for SafeDiv {
    fn name(&self) -> &str {
        &self.name
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        need_f32(&self.name, inputs)?;
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let (a, b) = (&inputs[0], &inputs[1]);
        if a.shape() != b.shape() {
            return op_err(format!("shapes {:?} and {:?} differ", a.shape(), b.shape()));
        }
        let out = ctx.output(0, DType::F32, a.shape())?;
        let guard = self.fixed;
        a.read(|av: ArrayViewD<'_, f32>| {
            b.read(|bv: ArrayViewD<'_, f32>| {
                out.write(|mut ov: ArrayViewMutD<'_, f32>| {
                    Zip::from(&mut ov).and(&av).and(&bv).for_each(|o, &x, &y| {
                        *o = if guard && y == 0.0 { 0.0 } else { x / y };
                    })
                })
            })
        })???;
        Ok(vec![out])
    }
}

/// The sum of a vector (typically one row of a larger matrix), as a
/// scalar. The broken kernel believes it owns one element more than the
/// view and keeps its running sum there: an off-by-one store into the next
/// row of the base matrix.
pub struct RowSum {
    pub fixed: bool,
    name: String,
}

impl RowSum {
    pub fn new(fixed: bool) -> Self {
        RowSum {
            fixed,
            name: name(fixed, "row_sum"),
        }
    }
}

impl Op for RowSum {
    fn name(&self) -> &str {
        &self.name
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        need_f32(&self.name, inputs)?;
        Ok(vec![TypeInfo::new(DType::F32, Some(Vec::new()))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        if x.ndim() != 1 {
            return op_err(format!("op '{}' takes a vector", self.name));
        }
        let sum: f32 = x.read(|v: ArrayViewD<'_, f32>| v.sum())?;
        if !self.fixed {
            let n = x.size();
            let scratch = x.with_layout(Layout::new(vec![n + 1], x.strides().to_vec(), x.offset()))?;
            scratch.set_at(&[n], Scalar::F32(sum))?;
        }
        let out = ctx.output(0, DType::F32, &[])?;
        out.set_at(&[], Scalar::F32(sum))?;
        Ok(vec![out])
    }
}

thread_local! {
    /// The broken `cached_double`'s workspace, kept across calls.
    static WORKSPACE: RefCell<Option<Tensor>> = const { RefCell::new(None) };
}

/// `2·x` into a fresh output. The broken one keeps a workspace across
/// calls and returns it, so the next call overwrites the previous result
/// while that result is still in use.
pub struct CachedDouble {
    pub fixed: bool,
    name: String,
}

impl CachedDouble {
    pub fn new(fixed: bool) -> Self {
        CachedDouble {
            fixed,
            name: name(fixed, "cached_double"),
        }
    }

    fn workspace(shape: &[usize]) -> Result<Tensor> {
        WORKSPACE.with(|w| {
            let mut w = w.borrow_mut();
            match &*w {
                Some(t) if t.shape() == shape => Ok(t.clone()),
                _ => {
                    let t = Tensor::zeros(DType::F32, shape)?;
                    *w = Some(t.clone());
                    Ok(t)
                }
            }
        })
    }
}

impl Op for CachedDouble {
    corpus_unary_basics!(need_f32);
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        let out = if self.fixed {
            ctx.output(0, DType::F32, x.shape())?
        } else {
            Self::workspace(x.shape())?
        };
        x.read(|xv: ArrayViewD<'_, f32>| {
            out.write(|mut ov: ArrayViewMutD<'_, f32>| ov.zip_mut_with(&xv, |o, &v| *o = 2.0 * v))
        })??;
        Ok(vec![out])
    }
}

/// Every broken op and its twin.
pub fn ops() -> Vec<Arc<dyn Op>> {
    let mut v: Vec<Arc<dyn Op>> = Vec::new();
    for fixed in [false, true] {
        v.push(Arc::new(Accumulate::new(fixed)));
        v.push(Arc::new(Identity::new(fixed)));
        v.push(Arc::new(FirstRow::new(fixed)));
        v.push(Arc::new(Split::new(fixed)));
        v.push(Arc::new(Increment::new(fixed)));
        v.push(Arc::new(LazyScale::new(fixed)));
        v.push(Arc::new(View::new(fixed)));
        v.push(Arc::new(SafeDiv::new(fixed)));
        v.push(Arc::new(RowSum::new(fixed)));
        v.push(Arc::new(CachedDouble::new(fixed)));
    }
    v
}

/// The built-in ops plus every op of this corpus.
pub fn registry() -> OpRegistry {
    let mut r = OpRegistry::builtin();
    for op in ops() {
        r.register_op(op);
    }
    r
}

/// The finding a broken op's name promises, `None` for a twin or an op not
/// in the corpus.
pub fn intended(op: &str) -> Option<Kind> {
    Some(match op {
        "broken_accumulate" => Kind::DESTROYED_INPUT,
        "broken_identity" | "broken_first_row" => Kind::UNDECLARED_VIEW,
        "broken_split" => Kind::ALIASED_OUTPUTS,
        "broken_increment" | "broken_row_sum" => Kind::OUT_OF_VIEW_WRITE,
        "broken_cached_double" => Kind::UNDECLARED_ALIAS,
        "broken_lazy_scale" => Kind::DECLARED_DESTROY_UNUSED,
        "broken_view" => Kind::DECLARED_VIEW_NOT_ALIASED,
        "broken_safe_div" => Kind::NON_FINITE,
        _ => return None,
    })
}
