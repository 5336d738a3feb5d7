//! `unique(x)` (ONNX Unique): x's distinct elements, or with attr `axis`
//! its distinct slices along that axis (negative counts from the end;
//! without it x is flattened). Attr `sorted` (default true): ascending
//! (slices compared element by element, as numpy's `unique`), else in
//! order of first appearance. Four outputs: `y` the distinct values,
//! then i64 `indices` (where each first appears in x), `inverse_indices`
//! (for each element or slice of x, its place in y) and `counts`. The
//! number of distinct values is decided when the op runs. Any dtype;
//! floats compare as numbers (NaN after every number, NaNs equal).

use std::cmp::Ordering;
use std::sync::Arc;

use ndarray::{ArrayD, Axis, IxDyn};

use crate::dtype::{DType, Element};
use crate::error::{op_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `unique` op.
#[derive(Clone, Debug, PartialEq)]
pub struct Unique {
    pub axis: Option<i64>,
    pub sorted: bool,
}

/// Whether `a` is NaN: the only value unordered against itself.
fn is_nan<T: Element>(a: T) -> bool {
    a.partial_cmp(&a).is_none()
}

/// A total order on elements: NaN after every number.
fn order<T: Element>(a: T, b: T) -> Ordering {
    match a.partial_cmp(&b) {
        Some(o) => o,
        None => is_nan(a).cmp(&is_nan(b)),
    }
}

fn slice_order<T: Element>(a: &[T], b: &[T]) -> Ordering {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| order(x, y))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

impl Unique {
    fn axis(&self, rank: usize) -> Result<Option<usize>> {
        let Some(a) = self.axis else { return Ok(None) };
        let n = if a < 0 { a + rank as i64 } else { a };
        if n < 0 || n >= rank as i64 {
            return op_err(format!("op 'unique': axis {a} is out of range for rank {rank}"));
        }
        Ok(Some(n as usize))
    }
}

/// The four outputs' data: distinct slices (each `width` long, in y's
/// order), first indices, inverse indices, counts.
struct Found<T> {
    slices: Vec<Vec<T>>,
    first: Vec<i64>,
    inverse: Vec<i64>,
    counts: Vec<i64>,
}

fn find<T: Element>(rows: &[Vec<T>], sorted: bool) -> Found<T> {
    let mut group_of = vec![0usize; rows.len()];
    let mut by_value: Vec<usize> = (0..rows.len()).collect();
    by_value.sort_by(|&i, &j| slice_order(&rows[i], &rows[j]).then(i.cmp(&j)));
    // Groups of equal rows; each group's first row is its smallest index.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &i in &by_value {
        match groups.last_mut() {
            Some(g) if slice_order(&rows[g[0]], &rows[i]).is_eq() => g.push(i),
            _ => groups.push(vec![i]),
        }
    }
    if !sorted {
        groups.sort_by_key(|g| g[0]);
    }
    let mut out = Found {
        slices: Vec::new(),
        first: Vec::new(),
        inverse: vec![0; rows.len()],
        counts: Vec::new(),
    };
    for (k, g) in groups.iter().enumerate() {
        out.slices.push(rows[g[0]].clone());
        out.first.push(g[0] as i64);
        out.counts.push(g.len() as i64);
        for &i in g {
            group_of[i] = k;
        }
    }
    for (i, &k) in group_of.iter().enumerate() {
        out.inverse[i] = k as i64;
    }
    out
}

fn unique_kernel<T: Element>(op: &Unique, x: &Tensor, ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
    let a = x.to_array::<T>()?;
    let axis = op.axis(a.ndim())?;
    let rows: Vec<Vec<T>> = match axis {
        None => a.iter().map(|&v| vec![v]).collect(),
        Some(ax) => a
            .axis_iter(Axis(ax))
            .map(|s| s.iter().copied().collect())
            .collect(),
    };
    let shape_of = |n: usize| -> Vec<usize> {
        match axis {
            None => vec![n],
            Some(ax) => {
                let mut s = a.shape().to_vec();
                s[ax] = n;
                s
            }
        }
    };
    let f = find(&rows, op.sorted);
    let n = f.slices.len();
    let y_shape = shape_of(n);
    let y = match axis {
        None => ArrayD::from_shape_vec(IxDyn(&y_shape), f.slices.into_iter().flatten().collect()),
        Some(ax) => {
            // Slices laid along `ax`: build with the axis first, then move it.
            let mut first = y_shape.clone();
            first.remove(ax);
            first.insert(0, n);
            ArrayD::from_shape_vec(IxDyn(&first), f.slices.into_iter().flatten().collect()).map(|t| {
                let mut perm: Vec<usize> = (1..y_shape.len()).collect();
                perm.insert(ax, 0);
                t.permuted_axes(IxDyn(&perm)).as_standard_layout().into_owned()
            })
        }
    }
    .map_err(|e| crate::error::Error::Op(format!("op 'unique': {e}")))?;
    let yt = ctx.output(0, x.dtype(), &y_shape)?;
    yt.assign(&Tensor::from_array(&y))?;
    let mut outs = vec![yt];
    for (k, v) in [(1, f.first), (2, f.inverse), (3, f.counts)] {
        let t = ctx.output(k, DType::I64, &[v.len()])?;
        t.assign(&Tensor::from_vec(&[v.len()], v)?)?;
        outs.push(t);
    }
    Ok(outs)
}

impl Op for Unique {
    fn name(&self) -> &str {
        "unique"
    }
    fn num_outputs(&self) -> usize {
        4
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let y = match (&x.shape, self.axis) {
            (_, None) => Some(vec![-1]),
            (Some(s), Some(_)) => {
                let ax = self.axis(s.len())?.unwrap_or(0);
                let mut s = s.clone();
                s[ax] = -1;
                Some(s)
            }
            (None, Some(_)) => None,
        };
        let idx = TypeInfo::new(DType::I64, Some(vec![-1]));
        Ok(vec![TypeInfo::new(x.dtype, y), idx.clone(), idx.clone(), idx])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        crate::dispatch_all!(x.dtype(), T => unique_kernel::<T>(self, x, ctx))
    }
    fn attrs(&self) -> Attrs {
        let a = Attrs::new().with("sorted", self.sorted);
        match self.axis {
            Some(x) => a.with("axis", x),
            None => a,
        }
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("unique", |a: &Attrs| {
        a.only("unique", &["axis", "sorted"])?;
        Ok(Arc::new(Unique {
            axis: a.i64("axis")?,
            sorted: a.bool("sorted")?.unwrap_or(true),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_all, t};

    fn i64s(t: &Tensor) -> Vec<i64> {
        t.to_array::<i64>().unwrap().iter().copied().collect()
    }

    #[test]
    fn distinct_values_sorted_or_by_first_appearance() {
        let x = t(&[6], vec![2.0f32, 1.0, 1.0, 3.0, 4.0, 3.0]);
        let o = run_all(&*op("unique", Attrs::new()), std::slice::from_ref(&x)).unwrap();
        assert_eq!(o[0].to_f64_vec().unwrap(), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(i64s(&o[1]), [1, 0, 3, 4]);
        assert_eq!(i64s(&o[2]), [1, 0, 0, 2, 3, 2]);
        assert_eq!(i64s(&o[3]), [2, 1, 2, 1]);
        let o = run_all(&*op("unique", Attrs::new().with("sorted", false)), &[x]).unwrap();
        assert_eq!(o[0].to_f64_vec().unwrap(), [2.0, 1.0, 3.0, 4.0]);
        assert_eq!(i64s(&o[1]), [0, 1, 3, 4]);
        assert_eq!(i64s(&o[2]), [0, 1, 1, 2, 3, 2]);
    }

    #[test]
    fn distinct_slices_along_an_axis() {
        // Rows [1, 0], [1, 0], [0, 1] along axis 0 -> [0, 1], [1, 0].
        let x = t(&[3, 2], vec![1i64, 0, 1, 0, 0, 1]);
        let o = run_all(
            &*op("unique", Attrs::new().with("axis", 0)),
            std::slice::from_ref(&x),
        )
        .unwrap();
        assert_eq!(o[0].shape(), &[2, 2]);
        assert_eq!(i64s(&o[0]), [0, 1, 1, 0]);
        assert_eq!(i64s(&o[2]), [1, 1, 0]);
        // Columns along axis -1: [1, 1, 0] and [0, 0, 1], sorted.
        let o = run_all(&*op("unique", Attrs::new().with("axis", -1)), &[x]).unwrap();
        assert_eq!(o[0].shape(), &[3, 2]);
        assert_eq!(i64s(&o[0]), [0, 1, 0, 1, 1, 0]);
        assert_eq!(i64s(&o[3]), [1, 1]);
    }
}
