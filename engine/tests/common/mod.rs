//! Shared helpers of the engine's integration tests: an independent numpy
//! basic-indexing reference, index-list strategies and small tensor helpers.
//!
//! The reference below is written from numpy's slicing rules, not from
//! `engine/src/tensor/index.rs`: it walks each interval with an explicit loop
//! (no length formula) and gathers elements by brute force.
#![allow(dead_code)]

use std::collections::HashMap;

use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use vigil_engine::exec::{Executor, NoListener, RunOptions, RunOutput};
use vigil_engine::{Graph, IndexSpec, Layout, Tensor};

// ----- runs ---------------------------------------------------------------

/// The run node by node, through a cursor (never fused).
pub fn stepped(graph: &Graph, feeds: &HashMap<String, Tensor>) -> RunOutput {
    let exec = Executor::new(graph).unwrap();
    let opts = RunOptions::default();
    let mut cursor = exec.start(feeds, &mut NoListener, &opts).unwrap();
    while cursor.step(&mut NoListener).unwrap().is_some() {}
    cursor.finish(&mut NoListener).unwrap()
}

// ----- tensors ------------------------------------------------------------

/// A C-contiguous i64 tensor holding 0..n.
pub fn arange_i64(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec(shape, (0..n as i64).collect()).unwrap()
}

/// A C-contiguous f64 tensor holding 0..n.
pub fn arange_f64(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec(shape, (0..n).map(|v| v as f64).collect()).unwrap()
}

pub fn f64s(shape: &[usize], v: &[f64]) -> Tensor {
    Tensor::from_vec(shape, v.to_vec()).unwrap()
}

pub fn i64s(shape: &[usize], v: &[i64]) -> Tensor {
    Tensor::from_vec(shape, v.to_vec()).unwrap()
}

/// The elements of `t` in C order.
pub fn vals_f64(t: &Tensor) -> Vec<f64> {
    t.to_array::<f64>().unwrap().iter().copied().collect()
}

pub fn vals_i64(t: &Tensor) -> Vec<i64> {
    t.to_array::<i64>().unwrap().iter().copied().collect()
}

/// Every multi-index of `shape` in C order.
pub fn multi_indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..n {
        out.push(idx.clone());
        for ax in (0..shape.len()).rev() {
            idx[ax] += 1;
            if idx[ax] < shape[ax] {
                break;
            }
            idx[ax] = 0;
        }
    }
    out
}

// ----- the independent reference -------------------------------------------

/// What one output axis of a basic-indexing result takes from the source.
#[derive(Clone, Debug)]
pub enum OutAxis {
    /// Source axis `axis`, at these source positions, in order.
    Src { axis: usize, picks: Vec<usize> },
    /// A new length-1 axis.
    New,
}

/// The per-axis selection of basic indexing, numpy style.
#[derive(Clone, Debug)]
pub struct Selection {
    pub out: Vec<OutAxis>,
    /// Source axes fixed by a point, with the (resolved) position.
    pub fixed: Vec<(usize, usize)>,
    /// For each interval output axis: the step (signed) used.
    pub steps: Vec<Option<i128>>,
}

/// The source positions an interval picks on an axis of length `d`, by an
/// explicit walk from start towards end.
pub fn interval_picks(d: usize, start: i64, end: i64, stride: i64, inclusive: bool) -> Vec<usize> {
    assert!(stride != 0);
    let d = d as i128;
    let st = stride as i128;
    let (mut s, mut e) = (start as i128, end as i128);
    if s < 0 {
        s += d;
    }
    if e < 0 {
        e += d;
    }
    if inclusive {
        e += st.signum();
    }
    if st > 0 {
        s = s.clamp(0, d);
        e = e.clamp(0, d);
    } else {
        s = s.clamp(-1, d - 1);
        e = e.clamp(-1, d - 1);
    }
    let mut picks = Vec::new();
    let mut i = s;
    while (st > 0 && i < e) || (st < 0 && i > e) {
        assert!((0..d).contains(&i), "reference walked out of the axis");
        picks.push(i as usize);
        i += st;
    }
    picks
}

/// numpy basic indexing of an array of shape `shape`, or the reason it is an
/// error (too many indices, a point out of range, a zero stride).
pub fn select(shape: &[usize], idx: &[IndexSpec]) -> Result<Selection, String> {
    let consumed = idx.iter().filter(|i| **i != IndexSpec::NewAxis).count();
    if consumed > shape.len() {
        return Err(format!("too many indices: {consumed} for {} axes", shape.len()));
    }
    let mut sel = Selection {
        out: Vec::new(),
        fixed: Vec::new(),
        steps: Vec::new(),
    };
    let mut axis = 0;
    for ix in idx {
        match *ix {
            IndexSpec::NewAxis => {
                sel.out.push(OutAxis::New);
                sel.steps.push(None);
            }
            IndexSpec::All => {
                sel.out.push(OutAxis::Src {
                    axis,
                    picks: (0..shape[axis]).collect(),
                });
                sel.steps.push(Some(1));
                axis += 1;
            }
            IndexSpec::Point(p) => {
                let d = shape[axis] as i128;
                let q = if p < 0 { p as i128 + d } else { p as i128 };
                if q < 0 || q >= d {
                    return Err(format!("point {p} out of range for length {d}"));
                }
                sel.fixed.push((axis, q as usize));
                axis += 1;
            }
            IndexSpec::Interval {
                start,
                end,
                stride,
                inclusive,
            } => {
                if stride == 0 {
                    return Err("stride 0".into());
                }
                let picks = interval_picks(shape[axis], start, end, stride, inclusive);
                sel.out.push(OutAxis::Src { axis, picks });
                sel.steps.push(Some(stride as i128));
                axis += 1;
            }
        }
    }
    for (ax, &d) in shape.iter().enumerate().skip(axis) {
        sel.out.push(OutAxis::Src {
            axis: ax,
            picks: (0..d).collect(),
        });
        sel.steps.push(Some(1));
    }
    Ok(sel)
}

impl Selection {
    pub fn shape(&self) -> Vec<usize> {
        self.out
            .iter()
            .map(|a| match a {
                OutAxis::Src { picks, .. } => picks.len(),
                OutAxis::New => 1,
            })
            .collect()
    }

    /// The source multi-index of each output element, in C order.
    pub fn source_indices(&self, src_ndim: usize) -> Vec<Vec<usize>> {
        multi_indices(&self.shape())
            .into_iter()
            .map(|o| {
                let mut src = vec![0usize; src_ndim];
                for &(ax, p) in &self.fixed {
                    src[ax] = p;
                }
                for (k, a) in self.out.iter().enumerate() {
                    if let OutAxis::Src { axis, picks } = a {
                        src[*axis] = picks[o[k]];
                    }
                }
                src
            })
            .collect()
    }

    /// Shape, strides and offset the view must have over `base`, by formula:
    /// offset = base offset + sum(start * stride), strides = stride * step,
    /// an empty interval keeps the original stride, a new axis has stride 0.
    /// Strides are `None` where they do not fit an isize.
    pub fn expected_layout(&self, base: &Layout) -> (Vec<usize>, Vec<Option<isize>>, usize) {
        let mut off = base.offset() as i128;
        for &(ax, p) in &self.fixed {
            off += p as i128 * base.strides()[ax] as i128;
        }
        let mut strides = Vec::new();
        for (a, step) in self.out.iter().zip(&self.steps) {
            match a {
                OutAxis::New => strides.push(Some(0)),
                OutAxis::Src { axis, picks } => {
                    let st = base.strides()[*axis] as i128;
                    if picks.is_empty() {
                        strides.push(Some(st as isize));
                    } else {
                        off += picks[0] as i128 * st;
                        strides.push(isize::try_from(st * step.unwrap()).ok());
                    }
                }
            }
        }
        (self.shape(), strides, off as usize)
    }
}

/// numpy basic indexing of `values` by brute force.
pub fn gather<T: Copy>(values: &ArrayD<T>, idx: &[IndexSpec]) -> Result<ArrayD<T>, String> {
    let sel = select(values.shape(), idx)?;
    let data: Vec<T> = sel
        .source_indices(values.ndim())
        .iter()
        .map(|s| values[IxDyn(s)])
        .collect();
    Ok(ArrayD::from_shape_vec(IxDyn(&sel.shape()), data).unwrap())
}

/// The flat (C-order) source positions that `idx` selects from a C-contiguous
/// array of `shape`, in the view's C order.
pub fn selected_flat(shape: &[usize], idx: &[IndexSpec]) -> Result<Vec<usize>, String> {
    let sel = select(shape, idx)?;
    let mut c = vec![1usize; shape.len()];
    for ax in (0..shape.len().saturating_sub(1)).rev() {
        c[ax] = c[ax + 1] * shape[ax + 1];
    }
    Ok(sel
        .source_indices(shape.len())
        .iter()
        .map(|s| s.iter().zip(&c).map(|(&i, &st)| i * st).sum())
        .collect())
}

// ----- strategies -------------------------------------------------------------

/// Interval bounds: small values (in and out of range, negative) and a few
/// "to the end" sentinels.
pub fn bound() -> impl Strategy<Value = i64> {
    prop_oneof![8 => -9i64..=9, 1 => prop::sample::select(vec![-1000i64, 1000])]
}

/// Interval strides: 1..=3 and the given negative ones.
pub fn stride(neg: &'static [i64]) -> impl Strategy<Value = i64> {
    let mut s = vec![1i64, 2, 3];
    s.extend_from_slice(neg);
    prop::sample::select(s)
}

pub fn interval(neg: &'static [i64]) -> impl Strategy<Value = IndexSpec> {
    (bound(), bound(), stride(neg), any::<bool>()).prop_map(|(start, end, stride, inclusive)| {
        IndexSpec::Interval {
            start,
            end,
            stride,
            inclusive,
        }
    })
}

/// Any index: points (possibly out of range), intervals, All, NewAxis.
pub fn any_index(neg: &'static [i64]) -> impl Strategy<Value = IndexSpec> {
    prop_oneof![
        2 => (-8i64..=8).prop_map(IndexSpec::Point),
        4 => interval(neg),
        1 => Just(IndexSpec::All),
        1 => Just(IndexSpec::NewAxis),
    ]
}

/// A shape of rank 0..=4 with dims 0..=6, and an index list of up to rank+2
/// entries (so too many indices and out-of-range points occur).
pub fn shape_and_indices(neg: &'static [i64]) -> impl Strategy<Value = (Vec<usize>, Vec<IndexSpec>)> {
    prop::collection::vec(0usize..=6, 0..=4).prop_flat_map(move |shape| {
        let n = shape.len();
        (Just(shape), prop::collection::vec(any_index(neg), 0..=n + 2))
    })
}

/// An index valid for an axis of length `d >= 1`.
fn valid_axis_index(d: usize, neg: &'static [i64]) -> BoxedStrategy<IndexSpec> {
    let d = d as i64;
    prop_oneof![
        1 => (-d..d).prop_map(IndexSpec::Point),
        3 => interval(neg),
        1 => Just(IndexSpec::All),
    ]
    .boxed()
}

/// A shape of rank 1..=4 with dims 1..=6 and a valid index list for it:
/// one index per axis, some NewAxis inserted, trailing indices dropped.
pub fn shape_and_valid_indices(neg: &'static [i64]) -> impl Strategy<Value = (Vec<usize>, Vec<IndexSpec>)> {
    prop::collection::vec(1usize..=6, 1..=4).prop_flat_map(move |shape| {
        let per_axis: Vec<BoxedStrategy<IndexSpec>> =
            shape.iter().map(|&d| valid_axis_index(d, neg)).collect();
        let n = shape.len();
        (Just(shape), per_axis, 0..=n, prop::collection::vec(0..=n, 0..=2)).prop_map(
            |(shape, mut idx, keep, new_axes)| {
                idx.truncate(keep);
                for p in new_axes {
                    let p = p.min(idx.len());
                    idx.insert(p, IndexSpec::NewAxis);
                }
                (shape, idx)
            },
        )
    })
}

/// Like [`shape_and_valid_indices`], keeping only non-empty views.
pub fn nonempty_view(neg: &'static [i64]) -> impl Strategy<Value = (Vec<usize>, Vec<IndexSpec>)> {
    shape_and_valid_indices(neg).prop_filter("empty view", |(shape, idx)| {
        select(shape, idx)
            .map(|s| s.shape().iter().product::<usize>() > 0)
            .unwrap_or(false)
    })
}

/// The negative interval strides the strategies draw from.
pub const ALL_NEG: &[i64] = &[-1, -2, -3];

/// The message of an expected error (for results whose Ok type is not Debug).
pub fn err_msg<T>(r: vigil_engine::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}
