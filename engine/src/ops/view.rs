//! View ops: their output shares input 0's buffer (view_map `{0: [0]}`).
//! They never copy into a pre-allocated output; that would make the "view"
//! a copy.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{attr_err, dtype_err, op_err, rank_err, shape_err, Error, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo, ViewKind};
use crate::tensor::layout::{check_target, resolve_axis};
use crate::tensor::limit::{self, MAX_RANK};
use crate::tensor::{check_reshape_target, resolve_reshape, IndexSpec, Tensor};

/// Decodes index inputs (each a 1-D i64 vector in the CreateView encoding).
pub fn decode_indices(inputs: &[Tensor]) -> Result<Vec<IndexSpec>> {
    inputs
        .iter()
        .enumerate()
        .map(|(pos, t)| {
            if t.dtype() != DType::I64 || t.ndim() != 1 {
                return dtype_err(format!(
                    "index {pos}: expected a 1-D i64 vector, got {} {:?}",
                    t.dtype(),
                    t.shape()
                ));
            }
            let v = t.to_array::<i64>()?;
            IndexSpec::decode(v.as_slice().unwrap_or(&[]), pos)
        })
        .collect()
}

fn check_index_types(op: &str, idx: &[TypeInfo]) -> Result<()> {
    for (pos, t) in idx.iter().enumerate() {
        if t.dtype != DType::I64 || t.rank().is_some_and(|r| r != 1) {
            return dtype_err(format!(
                "op '{op}': index {pos} must be a 1-D i64 vector, got {} {}",
                t.dtype,
                t.shape_string()
            ));
        }
    }
    Ok(())
}

/// Infers the indexed shape when the input shape is static and the index
/// vectors are constants; otherwise the rank is unknown (indices are
/// resolved at run time).
pub fn infer_indexed(op: &str, inputs: &[TypeInfo]) -> Result<TypeInfo> {
    if inputs.is_empty() {
        return op_err(format!("op '{op}' needs an input"));
    }
    check_index_types(op, &inputs[1..])?;
    let x = &inputs[0];
    // With a static input shape and constant index vectors, the indexed
    // shape is known now (and bad constant indices fail at load time).
    let (Some(shape), Some(values)) = (
        x.static_shape(),
        inputs[1..]
            .iter()
            .map(|t| t.value.as_deref())
            .collect::<Option<Vec<_>>>(),
    ) else {
        return Ok(TypeInfo::unknown(x.dtype));
    };
    limit::numel(&shape)?;
    let idx = values
        .iter()
        .enumerate()
        .map(|(pos, v)| IndexSpec::decode(v, pos))
        .collect::<Result<Vec<_>>>()?;
    let l = crate::tensor::index::apply(&crate::tensor::Layout::contiguous(&shape), &idx)?;
    limit::check_rank(l.ndim()).map_err(|e| Error::Op(format!("op '{op}': the view's {e}")))?;
    Ok(TypeInfo::known(x.dtype, l.shape()))
}

/// `create_view(x, idx...)`: basic indexing as a true view (seed ADR 0021).
#[derive(Clone, Debug)]
pub struct CreateView;

impl Op for CreateView {
    fn name(&self) -> &str {
        "create_view"
    }
    fn arity(&self) -> Arity {
        Arity::at_least(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        Ok(vec![infer_indexed("create_view", inputs)?])
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let idx = decode_indices(&inputs[1..])?;
        Ok(vec![inputs[0].slice(&idx)?])
    }
    fn view_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
    fn exempt_from_inplace_check(&self) -> bool {
        true
    }
}

/// `transpose(x)` with attr `perm` (default: reversed axes), as a view.
#[derive(Clone, Debug)]
pub struct Transpose {
    pub perm: Option<Vec<usize>>,
}

impl Op for Transpose {
    fn name(&self) -> &str {
        "transpose"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let a = &inputs[0];
        let shape = match (&a.shape, &self.perm) {
            (None, _) => None,
            (Some(s), None) => Some(s.iter().rev().copied().collect()),
            (Some(s), Some(p)) => {
                let mut seen = vec![false; s.len()];
                if p.len() != s.len()
                    || p.iter()
                        .any(|&i| i >= s.len() || std::mem::replace(&mut seen[i], true))
                {
                    return attr_err(format!(
                        "attr 'perm': {p:?} is not a permutation of {} axes",
                        s.len()
                    ));
                }
                Some(p.iter().map(|&i| s[i]).collect())
            }
        };
        Ok(vec![TypeInfo::new(a.dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].t(self.perm.as_deref())?])
    }
    fn view_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
    fn attrs(&self) -> Attrs {
        match &self.perm {
            Some(p) => Attrs::new().with("perm", p.clone()),
            None => Attrs::new(),
        }
    }
}

/// `reshape(x)` with attr `shape` (one -1 allowed): a view when the layout
/// allows, else a copy (a *may* view).
#[derive(Clone, Debug)]
pub struct Reshape {
    pub shape: Vec<i64>,
}

impl Op for Reshape {
    fn name(&self) -> &str {
        "reshape"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check_reshape_target(&self.shape)?;
        let a = &inputs[0];
        let shape = match a.static_shape() {
            Some(s) => resolve_reshape(&s, &self.shape)?
                .iter()
                .map(|&d| d as i64)
                .collect(),
            None => self.shape.clone(),
        };
        Ok(vec![TypeInfo::new(a.dtype, Some(shape))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        let shape = resolve_reshape(x.shape(), &self.shape)?;
        if let Some(l) = x.layout().reshape(&shape) {
            return Ok(vec![x.with_layout(l)?]);
        }
        // Not expressible as a view: copy into the output buffer.
        let out = ctx.output(0, x.dtype(), &shape)?;
        if !out.copy_c_order(x)? {
            // A pre-allocated output that is strided or shares x's buffer.
            out.assign(&x.to_contiguous()?.reshape(&self.shape)?)?;
        }
        Ok(vec![out])
    }
    fn view_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
    fn view_kind(&self) -> ViewKind {
        ViewKind::May
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("shape", self.shape.clone())
    }
}

/// `expand_dims(x)` with attr `axis`.
#[derive(Clone, Debug)]
pub struct ExpandDims {
    pub axis: i64,
}

impl Op for ExpandDims {
    fn name(&self) -> &str {
        "expand_dims"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let a = &inputs[0];
        let shape = match &a.shape {
            None => None,
            Some(s) => {
                if s.len() >= MAX_RANK {
                    return rank_err(format!(
                        "cannot add an axis to shape {}: rank {} is above the limit of {MAX_RANK} dimensions",
                        limit::shape_str(s),
                        s.len() + 1
                    ));
                }
                let ax = resolve_axis(self.axis, s.len() + 1)?;
                let mut s = s.clone();
                s.insert(ax, 1);
                Some(s)
            }
        };
        Ok(vec![TypeInfo::new(a.dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].expand_dims(self.axis)?])
    }
    fn view_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("axis", self.axis)
    }
}

/// `squeeze(x)` with optional attr `axes` (default: every length-1 axis).
#[derive(Clone, Debug)]
pub struct Squeeze {
    pub axes: Option<Vec<i64>>,
}

impl Op for Squeeze {
    fn name(&self) -> &str {
        "squeeze"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let a = &inputs[0];
        let shape = match (&a.shape, &self.axes) {
            (Some(s), Some(axes)) => {
                let mut drop = vec![false; s.len()];
                for &ax in axes {
                    let i = resolve_axis(ax, s.len())?;
                    if s[i] > 1 {
                        return op_err(format!("cannot squeeze axis {i} of length {}", s[i]));
                    }
                    drop[i] = true;
                }
                Some(
                    s.iter()
                        .enumerate()
                        .filter(|(i, _)| !drop[*i])
                        .map(|(_, &d)| d)
                        .collect(),
                )
            }
            (Some(s), None) if s.iter().all(|&d| d >= 0) => {
                Some(s.iter().copied().filter(|&d| d != 1).collect())
            }
            _ => None,
        };
        Ok(vec![TypeInfo::new(a.dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].squeeze(self.axes.as_deref())?])
    }
    fn view_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
    fn attrs(&self) -> Attrs {
        match &self.axes {
            Some(a) => Attrs::new().with("axes", a.clone()),
            None => Attrs::new(),
        }
    }
}

/// `broadcast_to(x)` with attr `shape`: a zero-stride view (read-only).
#[derive(Clone, Debug)]
pub struct BroadcastTo {
    pub shape: Vec<usize>,
}

impl Op for BroadcastTo {
    fn name(&self) -> &str {
        "broadcast_to"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check_target("broadcast", &self.shape)?;
        let a = &inputs[0];
        if let Some(s) = &a.shape {
            let target: Vec<i64> = self.shape.iter().map(|&d| d as i64).collect();
            let b = crate::ops::typeinfo::broadcast_shapes(&Some(s.clone()), &Some(target.clone()))?;
            if b != Some(target) {
                return shape_err(format!(
                    "cannot broadcast {} to {:?}",
                    a.shape_string(),
                    self.shape
                ));
            }
        }
        Ok(vec![TypeInfo::known(a.dtype, &self.shape)])
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_target("broadcast", &self.shape)?;
        Ok(vec![inputs[0].broadcast_to(&self.shape)?])
    }
    fn writable_views(&self) -> bool {
        false
    }
    fn view_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("shape", self.shape.clone())
    }
}

fn need<T>(op: &str, attr: &str, v: Option<T>) -> Result<T> {
    v.ok_or_else(|| Error::Attr(format!("op '{op}' needs attr '{attr}'")))
}

pub fn register(r: &mut OpRegistry) {
    r.register_op(Arc::new(CreateView));
    r.register("transpose", |a: &Attrs| {
        a.only("transpose", &["perm"])?;
        Ok(Arc::new(Transpose {
            perm: a.usize_list("perm")?,
        }) as Arc<dyn Op>)
    });
    r.register("reshape", |a: &Attrs| {
        a.only("reshape", &["shape"])?;
        let shape = need("reshape", "shape", a.i64_list("shape")?)?;
        check_reshape_target(&shape).map_err(|e| Error::Attr(format!("op 'reshape', attr 'shape': {e}")))?;
        Ok(Arc::new(Reshape { shape }) as Arc<dyn Op>)
    });
    r.register("expand_dims", |a: &Attrs| {
        a.only("expand_dims", &["axis"])?;
        Ok(Arc::new(ExpandDims {
            axis: need("expand_dims", "axis", a.i64("axis")?)?,
        }) as Arc<dyn Op>)
    });
    r.register("squeeze", |a: &Attrs| {
        a.only("squeeze", &["axes"])?;
        Ok(Arc::new(Squeeze {
            axes: a.i64_list("axes")?,
        }) as Arc<dyn Op>)
    });
    r.register("broadcast_to", |a: &Attrs| {
        a.only("broadcast_to", &["shape"])?;
        let shape = need("broadcast_to", "shape", a.usize_list("shape")?)?;
        check_target("broadcast", &shape)
            .map_err(|e| Error::Attr(format!("op 'broadcast_to', attr 'shape': {e}")))?;
        Ok(Arc::new(BroadcastTo { shape }) as Arc<dyn Op>)
    });
}
