//! Static types of graph values: a dtype and a possibly partial shape.

use serde::Serialize;

use crate::dtype::DType;
use crate::error::{dtype_err, shape_err, Result};

/// The dtype and shape of a value as far as they are known before running.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TypeInfo {
    pub dtype: DType,
    /// `None` when even the rank is unknown; `-1` marks an unknown dimension.
    pub shape: Option<Vec<i64>>,
    /// The elements of a small constant i64 vector (index vectors), so ops
    /// like `create_view` can infer shapes before running.
    #[serde(skip)]
    pub value: Option<Vec<i64>>,
}

impl TypeInfo {
    pub fn new(dtype: DType, shape: Option<Vec<i64>>) -> TypeInfo {
        TypeInfo {
            dtype,
            shape,
            value: None,
        }
    }

    pub fn known(dtype: DType, shape: &[usize]) -> TypeInfo {
        TypeInfo {
            dtype,
            shape: Some(shape.iter().map(|&d| d as i64).collect()),
            value: None,
        }
    }

    /// The dtype and shape of a tensor (no value).
    pub fn of(t: &crate::tensor::Tensor) -> TypeInfo {
        TypeInfo::known(t.dtype(), t.shape())
    }

    /// The dtype every input shares, when `accepts` takes it; else an error
    /// naming op `op`, the `kind` of dtype it needs and the dtypes it got.
    pub fn common_dtype(
        op: &str,
        inputs: &[TypeInfo],
        kind: &str,
        accepts: fn(DType) -> bool,
    ) -> Result<DType> {
        let d = inputs.first().map_or(DType::F32, |t| t.dtype);
        if !accepts(d) || inputs.iter().any(|t| t.dtype != d) {
            let got: Vec<String> = inputs.iter().map(|t| t.dtype.to_string()).collect();
            return dtype_err(format!(
                "op '{op}' needs {kind} inputs of one dtype, got {}",
                got.join(", ")
            ));
        }
        Ok(d)
    }

    /// The type of a constant; small 1-D i64 constants carry their value.
    pub fn of_constant(t: &crate::tensor::Tensor) -> TypeInfo {
        let mut ty = TypeInfo::known(t.dtype(), t.shape());
        if t.dtype() == DType::I64 && t.ndim() == 1 && t.size() <= 64 {
            ty.value = t.to_array::<i64>().ok().map(|a| a.iter().copied().collect());
        }
        ty
    }

    pub fn unknown(dtype: DType) -> TypeInfo {
        TypeInfo {
            dtype,
            shape: None,
            value: None,
        }
    }

    pub fn rank(&self) -> Option<usize> {
        self.shape.as_ref().map(|s| s.len())
    }

    /// The shape when every dimension is known.
    pub fn static_shape(&self) -> Option<Vec<usize>> {
        let s = self.shape.as_ref()?;
        s.iter()
            .map(|&d| if d >= 0 { Some(d as usize) } else { None })
            .collect()
    }

    /// True when a concrete shape fits this (partial) shape.
    pub fn admits(&self, shape: &[usize]) -> bool {
        match &self.shape {
            None => true,
            Some(s) => s.len() == shape.len() && s.iter().zip(shape).all(|(&d, &x)| d < 0 || d as usize == x),
        }
    }

    pub fn shape_string(&self) -> String {
        match &self.shape {
            None => "?".into(),
            Some(s) => format!(
                "[{}]",
                s.iter()
                    .map(|d| if *d < 0 { "?".to_string() } else { d.to_string() })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// numpy broadcasting of partial shapes; `-1` dims stay unknown unless the
/// other side fixes them.
pub fn broadcast_shapes(a: &Option<Vec<i64>>, b: &Option<Vec<i64>>) -> Result<Option<Vec<i64>>> {
    let (Some(a), Some(b)) = (a, b) else {
        return Ok(None);
    };
    let n = a.len().max(b.len());
    let mut out = vec![0i64; n];
    for i in 0..n {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            (-1, y) => y.max(-1),
            (x, -1) => x,
            _ => return shape_err(format!("shapes {a:?} and {b:?} do not broadcast")),
        };
    }
    Ok(Some(out))
}

/// numpy broadcasting of concrete shapes.
pub fn broadcast_concrete(a: &[usize], b: &[usize]) -> Result<crate::tensor::layout::Dims> {
    let n = a.len().max(b.len());
    // Inline up to rank 4: elementwise ops call this once per run.
    let mut out: crate::tensor::layout::Dims = smallvec::smallvec![0usize; n];
    for i in 0..n {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return shape_err(format!("shapes {a:?} and {b:?} do not broadcast")),
        };
    }
    Ok(out)
}
