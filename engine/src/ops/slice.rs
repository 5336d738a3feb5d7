//! `slice(x, starts, ends[, axes[, steps]])` (ONNX Slice) with its bounds
//! read when it runs: a view of x (view_map `{0: [0]}`), whose shape is
//! decided when the op runs (`infer` knows x's rank, and the dims of axes
//! no bound names when `axes` is a constant). The importer emits it only
//! for bounds it cannot fold; folded bounds become a `create_view`.
//!
//! starts, ends, axes and steps are 1-D i32 or i64 vectors of one length
//! (an empty axes or steps vector stands for an absent one: axes
//! `0..len`, steps 1). Per sliced axis of length d, as ONNX defines it:
//! a negative start or end has d added once; start is clamped to `[0, d]`
//! for a positive step and `[0, d−1]` for a negative one, end to `[0, d]`
//! and `[−1, d−1]`; the axis keeps `start, start+step, …` short of end.
//! This is numpy's slice except for a start before the axis with a
//! negative step, which ONNX clamps to element 0 where numpy gives
//! nothing. A step of 0, an axis out of range or named twice is an error.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{attr_err, dtype_err, index_err, shape_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::{IndexSpec, Tensor};

/// The `slice` op.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice;

/// ONNX's start for an axis of length `d` sliced with `step`, made
/// non-negative where ONNX and numpy differ, so that numpy's interval
/// rules (`create_view`) then give ONNX's slice with `end` as it is.
pub fn onnx_start(d: i64, start: i64, step: i64) -> i64 {
    if step < 0 && d > 0 && start < 0 && start.saturating_add(d) < 0 {
        0
    } else {
        start
    }
}

/// The index of each of x's `rank` axes for ONNX bounds: an interval on
/// each named axis, All on the others.
pub fn onnx_indices(
    shape: &[usize],
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
) -> Result<Vec<IndexSpec>> {
    let n = starts.len();
    let r = shape.len() as i64;
    if ends.len() != n || axes.is_some_and(|a| a.len() != n) || steps.is_some_and(|s| s.len() != n) {
        return shape_err(format!(
            "op 'slice': starts, ends, axes and steps differ in length ({n}, {}, {}, {})",
            ends.len(),
            axes.map_or(n, <[i64]>::len),
            steps.map_or(n, <[i64]>::len)
        ));
    }
    let mut idx = vec![IndexSpec::All; shape.len()];
    let mut named = vec![false; shape.len()];
    for k in 0..n {
        let a = axes.map_or(k as i64, |a| a[k]);
        let ax = if a < 0 { a + r } else { a };
        if !(0..r).contains(&ax) {
            return index_err(format!("op 'slice': axis {a} is out of range for rank {r}"));
        }
        let ax = ax as usize;
        if std::mem::replace(&mut named[ax], true) {
            return attr_err(format!("op 'slice': axis {a} is named twice"));
        }
        let step = steps.map_or(1, |s| s[k]);
        if step == 0 {
            return attr_err(format!("op 'slice': step {k} is 0"));
        }
        let d = shape[ax] as i64;
        idx[ax] = IndexSpec::range(onnx_start(d, starts[k], step), ends[k], step);
    }
    Ok(idx)
}

/// A bound vector's elements (i32 or i64, 1-D).
fn ints(t: &Tensor, what: &str) -> Result<Vec<i64>> {
    check_bound(&TypeInfo::of(t), what)?;
    Ok(t.cast(DType::I64)?.to_array::<i64>()?.iter().copied().collect())
}

fn check_bound(t: &TypeInfo, what: &str) -> Result<()> {
    if !matches!(t.dtype, DType::I32 | DType::I64) || t.rank().is_some_and(|r| r != 1) {
        return dtype_err(format!(
            "op 'slice': {what} must be a 1-D i32 or i64 vector, got {} {}",
            t.dtype,
            t.shape_string()
        ));
    }
    Ok(())
}

const BOUNDS: [&str; 4] = ["starts", "ends", "axes", "steps"];

impl Op for Slice {
    fn name(&self) -> &str {
        "slice"
    }
    fn arity(&self) -> Arity {
        Arity { min: 3, max: Some(5) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        for (t, what) in inputs[1..].iter().zip(BOUNDS) {
            check_bound(t, what)?;
        }
        let x = &inputs[0];
        let Some(xs) = &x.shape else {
            return Ok(vec![TypeInfo::unknown(x.dtype)]);
        };
        let r = xs.len() as i64;
        // The axes the bounds name, when that is known now: a constant
        // axes vector, or none given and starts of a known length.
        let named: Option<Vec<i64>> = match inputs.get(3) {
            Some(a) if a.shape.as_deref() == Some(&[0]) => None,
            Some(a) => a.value.clone(),
            None => None,
        }
        .or_else(|| {
            let absent = inputs.get(3).is_none_or(|a| a.shape.as_deref() == Some(&[0]));
            match inputs[1].shape.as_deref() {
                Some(&[n]) if absent && n >= 0 => Some((0..n).collect()),
                _ => None,
            }
        });
        let shape = match named {
            Some(axes) => {
                let mut s = xs.clone();
                for a in axes {
                    let ax = if a < 0 { a + r } else { a };
                    if let Some(d) = usize::try_from(ax).ok().and_then(|i| s.get_mut(i)) {
                        *d = -1;
                    }
                }
                s
            }
            None => vec![-1; xs.len()],
        };
        Ok(vec![TypeInfo::new(x.dtype, Some(shape))])
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let mut b = Vec::with_capacity(4);
        for (t, what) in inputs[1..].iter().zip(BOUNDS) {
            b.push(ints(t, what)?);
        }
        let n = b[0].len();
        // An empty axes or steps vector stands for an absent one, unless
        // the slice itself is empty (then every vector is empty anyway).
        let opt = |k: usize| b.get(k).filter(|v| !v.is_empty() || n == 0).map(Vec::as_slice);
        let x = &inputs[0];
        let idx = onnx_indices(x.shape(), &b[0], &b[1], opt(2), opt(3))?;
        Ok(vec![x.slice(&idx)?])
    }
    fn view_map(&self) -> Vec<(usize, usize)> {
        vec![(0, 0)]
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register_op(Arc::new(Slice));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_all, run_vec, t};
    use proptest::prelude::*;

    fn v(x: &[i64]) -> Tensor {
        Tensor::from_i64s(x)
    }

    /// ONNX's definition for one axis, written out: the positions kept.
    fn kept(d: i64, start: i64, end: i64, step: i64) -> Vec<i64> {
        if d == 0 {
            return Vec::new();
        }
        let (s, e) = (
            if start < 0 { start.saturating_add(d) } else { start },
            if end < 0 { end.saturating_add(d) } else { end },
        );
        let (s, e) = if step > 0 {
            (s.clamp(0, d), e.clamp(0, d))
        } else {
            (s.clamp(0, d - 1), e.clamp(-1, d - 1))
        };
        let mut out = Vec::new();
        let mut i = s;
        while (step > 0 && i < e) || (step < 0 && i > e) {
            out.push(i);
            i += step;
        }
        out
    }

    #[test]
    fn onnx_examples() {
        let x = t(&[2, 4], vec![1i32, 2, 3, 4, 5, 6, 7, 8]);
        let o = op("slice", Attrs::new());
        let (s, y) =
            run_vec::<i32>(&*o, &[x.clone(), v(&[1, 0]), v(&[2, 3]), v(&[0, 1]), v(&[1, 2])]).unwrap();
        assert_eq!((s, y), (vec![1, 2], vec![5, 7]));
        let (s, y) = run_vec::<i32>(&*o, &[x, v(&[0, 1]), v(&[-1, 1000])]).unwrap();
        assert_eq!((s, y), (vec![1, 3], vec![2, 3, 4]));
    }

    #[test]
    fn the_output_is_a_view_of_x() {
        let x = t(&[3, 4], (0..12).collect::<Vec<i64>>());
        let y = run_all(
            &*op("slice", Attrs::new()),
            &[x.clone(), v(&[2]), v(&[i64::MIN]), v(&[1]), v(&[-2])],
        )
        .unwrap()
        .remove(0);
        assert!(y.same_buffer(&x));
        assert_eq!(y.shape(), [3, 2]);
        let got: Vec<i64> = y.to_array::<i64>().unwrap().iter().copied().collect();
        assert_eq!(got, [2, 0, 6, 4, 10, 8]);
    }

    #[test]
    fn i32_bounds_and_empty_axes_and_steps_read_as_absent() {
        let x = t(&[5], vec![0f32, 1., 2., 3., 4.]);
        let i32s = |v: &[i32]| t(&[v.len()], v.to_vec());
        let (s, y) = run_vec::<f32>(
            &*op("slice", Attrs::new()),
            &[x, i32s(&[1]), i32s(&[i32::MAX]), v(&[]), v(&[])],
        )
        .unwrap();
        assert_eq!((s, y), (vec![4], vec![1., 2., 3., 4.]));
    }

    #[test]
    fn a_start_before_the_axis_with_a_negative_step_keeps_element_zero() {
        // ONNX clamps the start to 0 (numpy's x[-10::-1] would be empty).
        let x = t(&[5], vec![0i64, 1, 2, 3, 4]);
        let (_, y) = run_vec::<i64>(
            &*op("slice", Attrs::new()),
            &[x, v(&[-10]), v(&[i64::MIN]), v(&[0]), v(&[-1])],
        )
        .unwrap();
        assert_eq!(y, [0]);
    }

    #[test]
    fn bad_bounds_are_refused() {
        let o = op("slice", Attrs::new());
        let x = t(&[2, 3], vec![0f32; 6]);
        let run = |ins: &[Tensor]| run_all(&*o, ins).unwrap_err();
        assert_cause!(
            run(&[x.clone(), v(&[0]), v(&[1]), v(&[0]), v(&[0])]),
            Attr,
            "step"
        );
        assert_cause!(run(&[x.clone(), v(&[0]), v(&[1]), v(&[2])]), Index, "axis 2");
        assert_cause!(
            run(&[x.clone(), v(&[0, 0]), v(&[1, 1]), v(&[1, -1])]),
            Attr,
            "twice"
        );
        assert_cause!(run(&[x.clone(), v(&[0, 0]), v(&[1])]), Shape);
        assert_cause!(run(&[x, t(&[1], vec![0f32]), v(&[1])]), DType, "starts");
    }

    #[test]
    fn infer_knows_the_rank_and_the_axes_left_whole() {
        let o = op("slice", Attrs::new());
        let x = TypeInfo::known(DType::F32, &[4, 5, 6]);
        let bound = TypeInfo::new(DType::I64, Some(vec![1]));
        let ti = o.infer(&[x.clone(), bound.clone(), bound.clone()]).unwrap();
        assert_eq!(ti[0].shape, Some(vec![-1, 5, 6]));
        let axes = TypeInfo::of_constant(&v(&[-1]));
        let ti = o.infer(&[x.clone(), bound.clone(), bound.clone(), axes]).unwrap();
        assert_eq!(ti[0].shape, Some(vec![4, 5, -1]));
        let fed_axes = TypeInfo::new(DType::I64, Some(vec![1]));
        let ti = o.infer(&[x, bound.clone(), bound.clone(), fed_axes]).unwrap();
        assert_eq!(ti[0].shape, Some(vec![-1, -1, -1]));
        let bad = TypeInfo::new(DType::F32, Some(vec![1]));
        assert_cause!(
            o.infer(&[TypeInfo::unknown(DType::F32), bad, bound]).unwrap_err(),
            DType
        );
    }

    proptest! {
        #[test]
        fn matches_the_definition(
            shape in prop::collection::vec(0usize..5, 1..4),
            picks in prop::collection::vec((0usize..3, -8i64..8, -8i64..8, -3i64..4, 0u8..4), 0..3),
        ) {
            let r = shape.len();
            let mut starts = Vec::new();
            let mut ends = Vec::new();
            let mut axes = Vec::new();
            let mut steps = Vec::new();
            let mut named = Vec::new();
            for &(a, s, e, st, wild) in &picks {
                let a = a % r;
                if named.contains(&a) {
                    continue;
                }
                named.push(a);
                // Now and then an extreme bound, as exporters write them.
                let s = if wild == 1 { if st < 0 { i64::MAX } else { i64::MIN } } else { s };
                let e = if wild >= 2 { if st < 0 { i64::MIN } else { i64::MAX } } else { e };
                starts.push(s);
                ends.push(e);
                axes.push(if wild == 3 { a as i64 - r as i64 } else { a as i64 });
                steps.push(if st == 0 { 1 } else { st });
            }
            let n: usize = shape.iter().product();
            let x = t(&shape, (0..n as i64).collect::<Vec<_>>());
            let (got_shape, got) = run_vec::<i64>(
                &*op("slice", Attrs::new()),
                &[x, v(&starts), v(&ends), v(&axes), v(&steps)],
            ).unwrap();
            // Per axis the positions kept, then every combination in C order.
            let per_axis: Vec<Vec<i64>> = (0..r)
                .map(|ax| match axes.iter().position(|&a| (a + r as i64) as usize % r == ax) {
                    Some(k) => kept(shape[ax] as i64, starts[k], ends[k], steps[k]),
                    None => (0..shape[ax] as i64).collect(),
                })
                .collect();
            let want_shape: Vec<usize> = per_axis.iter().map(Vec::len).collect();
            let mut want = Vec::new();
            let total: usize = want_shape.iter().product();
            for flat in 0..total {
                let (mut rest, mut off) = (flat, 0i64);
                let mut stride = 1i64;
                for ax in (0..r).rev() {
                    off += per_axis[ax][rest % want_shape[ax]] * stride;
                    rest /= want_shape[ax];
                    stride *= shape[ax] as i64;
                }
                want.push(off);
            }
            prop_assert_eq!(got_shape, want_shape);
            prop_assert_eq!(got, want);
        }
    }
}
