//! `tree_ensemble(x)` (ONNX ai.onnx.ml TreeEnsemble, opset 5, without a
//! post transform): each row of x `[N, F]` (float) walks every tree from
//! its root to a leaf, and the leaves' weights are aggregated per target
//! into `[N, n_targets]` of x's dtype.
//!
//! Node `i` compares feature `nodes_featureids[i]` by `nodes_modes[i]`
//! (0 `<=`, 1 `<`, 2 `>=`, 3 `>`, 4 `==`, 5 `!=` against `nodes_splits[i]`;
//! 6: membership in its set) and goes to `nodes_truenodeids[i]` when the
//! comparison holds, else to `nodes_falsenodeids[i]`; each is a leaf index
//! when `nodes_trueleafs[i]` / `nodes_falseleafs[i]` is 1, else a node
//! index. A NaN feature goes the true way where
//! `nodes_missing_value_tracks_true[i]` is 1. The sets of the membership
//! nodes, in node order, are `membership_values` cut at each NaN. Leaf `j`
//! adds `leaf_weights[j]` to target `leaf_targetids[j]`.
//!
//! `aggregate` (sum, average, min, max; ONNX's `aggregate_function` 1, 0,
//! 2, 3): the sum, the sum over the number of trees, or the least or
//! largest weight reaching the target; a target no leaf reaches is 0 for
//! sum and average, and the dtype's largest (min) or lowest (max) finite
//! value otherwise, as ONNX's reference leaves it. Computed in f64 and
//! rounded once.

use std::sync::Arc;

use crate::dtype::{DType, Element};
use crate::error::{attr_err, dtype_err, index_err, rank_err, Result};
use crate::ops::{check_arity, float_list, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

const NAME: &str = "tree_ensemble";

/// How the leaves reaching one target combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    Sum,
    Average,
    Min,
    Max,
}

impl Aggregate {
    fn name(self) -> &'static str {
        match self {
            Aggregate::Sum => "sum",
            Aggregate::Average => "average",
            Aggregate::Min => "min",
            Aggregate::Max => "max",
        }
    }
}

/// Where a branch goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Node(usize),
    Leaf(usize),
}

/// One decision node.
#[derive(Clone, Debug)]
struct Node {
    feature: usize,
    mode: i64,
    split: f64,
    /// The members, for mode 6.
    set: Vec<f64>,
    missing_true: bool,
    yes: Next,
    no: Next,
}

impl Node {
    fn holds(&self, v: f64) -> bool {
        if v.is_nan() && self.missing_true {
            return true;
        }
        let s = self.split;
        match self.mode {
            0 => v <= s,
            1 => v < s,
            2 => v >= s,
            3 => v > s,
            4 => v == s,
            5 => v != s,
            _ => self.set.contains(&v),
        }
    }
}

/// The attrs, as given (for [`Op::attrs`]).
#[derive(Clone, Debug, Default)]
pub struct TreeAttrs {
    pub featureids: Vec<i64>,
    pub modes: Vec<i64>,
    pub splits: Vec<f64>,
    pub truenodeids: Vec<i64>,
    pub falsenodeids: Vec<i64>,
    pub trueleafs: Vec<i64>,
    pub falseleafs: Vec<i64>,
    pub missing_tracks_true: Option<Vec<i64>>,
    pub leaf_targetids: Vec<i64>,
    pub leaf_weights: Vec<f64>,
    pub tree_roots: Vec<i64>,
    pub membership_values: Option<Vec<f64>>,
    pub n_targets: usize,
    pub aggregate: Option<Aggregate>,
}

/// The `tree_ensemble` op.
#[derive(Clone, Debug)]
pub struct TreeEnsemble {
    attrs: TreeAttrs,
    aggregate: Aggregate,
    nodes: Vec<Node>,
    roots: Vec<usize>,
    /// The largest feature index any node reads, plus one.
    features: usize,
}

impl TreeEnsemble {
    /// Checks the attrs and builds the nodes.
    pub fn new(a: TreeAttrs) -> Result<TreeEnsemble> {
        let n = a.modes.len();
        let lists: [(&str, usize); 7] = [
            ("nodes_featureids", a.featureids.len()),
            ("nodes_splits", a.splits.len()),
            ("nodes_truenodeids", a.truenodeids.len()),
            ("nodes_falsenodeids", a.falsenodeids.len()),
            ("nodes_trueleafs", a.trueleafs.len()),
            ("nodes_falseleafs", a.falseleafs.len()),
            (
                "nodes_missing_value_tracks_true",
                a.missing_tracks_true.as_ref().map_or(n, Vec::len),
            ),
        ];
        if let Some((k, len)) = lists.iter().find(|(_, len)| *len != n) {
            return attr_err(format!(
                "op '{NAME}': attr '{k}' has {len} values, nodes_modes {n}"
            ));
        }
        let leaves = a.leaf_weights.len();
        if a.leaf_targetids.len() != leaves {
            return attr_err(format!(
                "op '{NAME}': attr 'leaf_targetids' has {} values, leaf_weights {leaves}",
                a.leaf_targetids.len()
            ));
        }
        if let Some(t) = a
            .leaf_targetids
            .iter()
            .find(|&&t| t < 0 || t as u64 >= a.n_targets as u64)
        {
            return attr_err(format!(
                "op '{NAME}': attr 'leaf_targetids' holds {t}, outside 0..{} (n_targets)",
                a.n_targets
            ));
        }
        // The sets, each ended by a NaN (the last one's NaN may be left out).
        let mut sets: Vec<Vec<f64>> = a
            .membership_values
            .as_deref()
            .unwrap_or(&[])
            .split(|v| v.is_nan())
            .map(<[f64]>::to_vec)
            .collect();
        if sets.last().is_some_and(Vec::is_empty) {
            sets.pop();
        }
        let members = a.modes.iter().filter(|&&m| m == 6).count();
        if sets.len() != members {
            return attr_err(format!(
                "op '{NAME}': attr 'membership_values' holds {} NaN-ended sets, there are {members} membership nodes",
                sets.len()
            ));
        }
        let mut sets = sets.into_iter();
        let target = |id: i64, leaf: i64, what: &str| -> Result<Next> {
            match leaf {
                1 if id >= 0 && (id as u64) < leaves as u64 => Ok(Next::Leaf(id as usize)),
                0 if id >= 0 && (id as u64) < n as u64 => Ok(Next::Node(id as usize)),
                0 | 1 => attr_err(format!(
                    "op '{NAME}': attr 'nodes_{what}nodeids' holds {id}, outside the {} {}",
                    if leaf == 1 { leaves } else { n },
                    if leaf == 1 { "leaves" } else { "nodes" }
                )),
                _ => attr_err(format!(
                    "op '{NAME}': attr 'nodes_{what}leafs' holds {leaf}; 0 or 1 expected"
                )),
            }
        };
        let mut nodes = Vec::with_capacity(n);
        for i in 0..n {
            let mode = a.modes[i];
            if !(0..=6).contains(&mode) {
                return attr_err(format!(
                    "op '{NAME}': attr 'nodes_modes' holds {mode}; 0 to 6 expected"
                ));
            }
            let feature = usize::try_from(a.featureids[i]).map_err(|_| {
                crate::Error::Attr(format!(
                    "op '{NAME}': attr 'nodes_featureids' holds {}, a negative feature",
                    a.featureids[i]
                ))
            })?;
            let set = if mode == 6 {
                sets.next().unwrap_or_default()
            } else {
                Vec::new()
            };
            nodes.push(Node {
                feature,
                mode,
                split: a.splits[i],
                set,
                missing_true: a.missing_tracks_true.as_ref().is_some_and(|m| m[i] != 0),
                yes: target(a.truenodeids[i], a.trueleafs[i], "true")?,
                no: target(a.falsenodeids[i], a.falseleafs[i], "false")?,
            });
        }
        let roots = a
            .tree_roots
            .iter()
            .map(|&r| {
                usize::try_from(r).ok().filter(|&r| r < n).map_or_else(
                    || {
                        attr_err(format!(
                            "op '{NAME}': attr 'tree_roots' holds {r}, outside the {n} nodes"
                        ))
                    },
                    Ok,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let features = nodes.iter().map(|d| d.feature + 1).max().unwrap_or(0);
        Ok(TreeEnsemble {
            aggregate: a.aggregate.unwrap_or(Aggregate::Sum),
            attrs: a,
            nodes,
            roots,
            features,
        })
    }

    /// The leaf that row `x` reaches from `root`; a cycle is an error.
    fn leaf(&self, root: usize, x: &[f64]) -> Result<usize> {
        let mut at = root;
        // A path without a cycle visits each node at most once.
        for _ in 0..self.nodes.len() {
            let d = &self.nodes[at];
            match if d.holds(x[d.feature]) { d.yes } else { d.no } {
                Next::Leaf(j) => return Ok(j),
                Next::Node(k) => at = k,
            }
        }
        attr_err(format!("op '{NAME}': the tree at root {root} has a cycle"))
    }

    fn check(&self, x: &TypeInfo) -> Result<()> {
        if !x.dtype.is_float() {
            return dtype_err(format!("op '{NAME}': x must be a float tensor, got {}", x.dtype));
        }
        if x.rank().is_some_and(|r| r != 2) {
            return rank_err(format!("op '{NAME}': x must be [N, F], got {}", x.shape_string()));
        }
        Ok(())
    }

    /// The outputs of rows `x` (`[n, f]`, f64) into `out` (`[n, targets]`).
    fn predict<T: Element>(&self, x: &[f64], f: usize, out: &mut [T], empty: f64) -> Result<()> {
        let t = self.attrs.n_targets;
        let mut acc = vec![0f64; t];
        let mut hit = vec![false; t];
        for (row, dst) in x.chunks(f.max(1)).zip(out.chunks_mut(t.max(1))) {
            acc.fill(0.0);
            hit.fill(false);
            for &r in &self.roots {
                let j = self.leaf(r, row)?;
                let (w, k) = (self.attrs.leaf_weights[j], self.attrs.leaf_targetids[j] as usize);
                acc[k] = match (self.aggregate, hit[k]) {
                    (Aggregate::Sum | Aggregate::Average, _) => acc[k] + w,
                    (_, false) => w,
                    (Aggregate::Min, true) => acc[k].min(w),
                    (Aggregate::Max, true) => acc[k].max(w),
                };
                hit[k] = true;
            }
            for ((d, &v), &h) in dst.iter_mut().zip(&acc).zip(&hit) {
                let v = match self.aggregate {
                    Aggregate::Sum => v,
                    Aggregate::Average => v / self.roots.len() as f64,
                    Aggregate::Min if !h => empty,
                    Aggregate::Max if !h => -empty,
                    _ => v,
                };
                *d = T::from_f64(v);
            }
        }
        Ok(())
    }
}

/// The largest finite value of float dtype `dt`.
fn largest(dt: DType) -> f64 {
    match dt {
        DType::F64 => f64::MAX,
        DType::F16 => crate::f16::MAX.to_f64(),
        DType::BF16 => crate::bf16::MAX.to_f64(),
        _ => f32::MAX as f64,
    }
}

impl Op for TreeEnsemble {
    fn name(&self) -> &str {
        NAME
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check(x)?;
        let shape = x.shape.as_ref().map(|s| vec![s[0], self.attrs.n_targets as i64]);
        Ok(vec![TypeInfo::new(x.dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check(&TypeInfo::of(x))?;
        let (n, f) = (x.shape()[0], x.shape()[1]);
        if self.features > f && n > 0 && !self.roots.is_empty() {
            return index_err(format!(
                "op '{NAME}': a node reads feature {}, x has {f}",
                self.features - 1
            ));
        }
        let out = ctx.output(0, x.dtype(), &[n, self.attrs.n_targets])?;
        let empty = largest(x.dtype());
        crate::dispatch_float!(x.dtype(), T => {
            let xv: Vec<f64> = x.to_array::<T>()?.iter().map(|v| v.to_f64()).collect();
            out.write_c_order(|o: &mut [T]| self.predict(&xv, f, o, empty))??;
        }, return dtype_err(format!("op '{NAME}': x must be a float tensor, got {}", x.dtype())));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let a = &self.attrs;
        let mut out = Attrs::new()
            .with("nodes_featureids", a.featureids.clone())
            .with("nodes_modes", a.modes.clone())
            .with("nodes_splits", float_list(&a.splits))
            .with("nodes_truenodeids", a.truenodeids.clone())
            .with("nodes_falsenodeids", a.falsenodeids.clone())
            .with("nodes_trueleafs", a.trueleafs.clone())
            .with("nodes_falseleafs", a.falseleafs.clone())
            .with("leaf_targetids", a.leaf_targetids.clone())
            .with("leaf_weights", float_list(&a.leaf_weights))
            .with("tree_roots", a.tree_roots.clone())
            .with("n_targets", a.n_targets as i64)
            .with("aggregate", self.aggregate.name());
        if let Some(m) = &a.missing_tracks_true {
            out = out.with("nodes_missing_value_tracks_true", m.clone());
        }
        if let Some(m) = &a.membership_values {
            out = out.with("membership_values", float_list(m));
        }
        out
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register(NAME, |a: &Attrs| {
        a.only(
            NAME,
            &[
                "nodes_featureids",
                "nodes_modes",
                "nodes_splits",
                "nodes_truenodeids",
                "nodes_falsenodeids",
                "nodes_trueleafs",
                "nodes_falseleafs",
                "nodes_missing_value_tracks_true",
                "leaf_targetids",
                "leaf_weights",
                "tree_roots",
                "membership_values",
                "n_targets",
                "aggregate",
            ],
        )?;
        let ints = |k: &str| -> Result<Vec<i64>> {
            a.i64_list(k)?
                .map_or_else(|| attr_err(format!("op '{NAME}': attr '{k}' is required")), Ok)
        };
        let floats = |k: &str| -> Result<Vec<f64>> {
            a.f64_list(k)?
                .map_or_else(|| attr_err(format!("op '{NAME}': attr '{k}' is required")), Ok)
        };
        let n_targets = match a.i64("n_targets")? {
            Some(t) if t >= 0 => t as usize,
            t => {
                return attr_err(format!(
                    "op '{NAME}': attr 'n_targets' is required (non-negative), got {t:?}"
                ))
            }
        };
        let aggregate = match a.str("aggregate")? {
            None | Some("sum") => Aggregate::Sum,
            Some("average") => Aggregate::Average,
            Some("min") => Aggregate::Min,
            Some("max") => Aggregate::Max,
            Some(o) => {
                return attr_err(format!(
                    "op '{NAME}': attr 'aggregate' must be sum, average, min or max, got '{o}'"
                ))
            }
        };
        let op = TreeEnsemble::new(TreeAttrs {
            featureids: ints("nodes_featureids")?,
            modes: ints("nodes_modes")?,
            splits: floats("nodes_splits")?,
            truenodeids: ints("nodes_truenodeids")?,
            falsenodeids: ints("nodes_falsenodeids")?,
            trueleafs: ints("nodes_trueleafs")?,
            falseleafs: ints("nodes_falseleafs")?,
            missing_tracks_true: a.i64_list("nodes_missing_value_tracks_true")?,
            leaf_targetids: ints("leaf_targetids")?,
            leaf_weights: floats("leaf_weights")?,
            tree_roots: ints("tree_roots")?,
            membership_values: a.f64_list("membership_values")?,
            n_targets,
            aggregate: Some(aggregate),
        })?;
        Ok(Arc::new(op) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_vec, t};

    /// Two trees over two features with two targets:
    /// tree A (root 0): x0 <= 1.5 ? leaf 0 (target 0, w 1) : node 1;
    ///   node 1: x1 in {2, 5} ? leaf 1 (target 1, w 10) : leaf 2 (target 0, w 100);
    /// tree B (root 2): x1 > 0 ? leaf 3 (target 0, w 1000) : leaf 4 (target 1, w 10000).
    fn two_trees(aggregate: &str) -> Attrs {
        Attrs::new()
            .with("nodes_featureids", vec![0i64, 1, 1])
            .with("nodes_modes", vec![0i64, 6, 3])
            .with("nodes_splits", float_list(&[1.5, f64::NAN, 0.0]))
            .with("nodes_truenodeids", vec![0i64, 1, 3])
            .with("nodes_falsenodeids", vec![1i64, 2, 4])
            .with("nodes_trueleafs", vec![1i64, 1, 1])
            .with("nodes_falseleafs", vec![0i64, 1, 1])
            .with("leaf_targetids", vec![0i64, 1, 0, 0, 1])
            .with("leaf_weights", float_list(&[1.0, 10.0, 100.0, 1000.0, 10000.0]))
            .with("tree_roots", vec![0i64, 2])
            .with("membership_values", float_list(&[2.0, 5.0, f64::NAN]))
            .with("n_targets", 2i64)
            .with("aggregate", aggregate)
    }

    /// The two trees above written out as code: (leaf weight, target) per tree.
    fn by_hand(x0: f64, x1: f64) -> [(f64, usize); 2] {
        let a = if x0 <= 1.5 {
            (1.0, 0)
        } else if x1 == 2.0 || x1 == 5.0 {
            (10.0, 1)
        } else {
            (100.0, 0)
        };
        let b = if x1 > 0.0 { (1000.0, 0) } else { (10000.0, 1) };
        [a, b]
    }

    const ROWS: [[f64; 2]; 5] = [[1.0, 2.0], [2.0, 2.0], [2.0, 3.0], [3.0, -1.0], [1.5, 5.0]];

    #[test]
    fn sums_the_leaves_each_row_reaches() {
        let x = t(&[5, 2], ROWS.iter().flatten().copied().collect::<Vec<f64>>());
        let (shape, got) = run_vec::<f64>(&*op(NAME, two_trees("sum")), &[x]).unwrap();
        assert_eq!(shape, [5, 2]);
        for (r, row) in ROWS.iter().enumerate() {
            let mut want = [0.0; 2];
            for (w, k) in by_hand(row[0], row[1]) {
                want[k] += w;
            }
            assert_eq!(got[2 * r..2 * r + 2], want, "row {row:?}");
        }
    }

    #[test]
    fn average_min_and_max_aggregate_per_target() {
        let x = t(
            &[5, 2],
            ROWS.iter().flatten().map(|&v| v as f32).collect::<Vec<f32>>(),
        );
        for agg in ["average", "min", "max"] {
            let (_, got) = run_vec::<f32>(&*op(NAME, two_trees(agg)), std::slice::from_ref(&x)).unwrap();
            for (r, row) in ROWS.iter().enumerate() {
                let leaves = by_hand(row[0], row[1]);
                for k in 0..2 {
                    let ws: Vec<f64> = leaves.iter().filter(|l| l.1 == k).map(|l| l.0).collect();
                    let want = match agg {
                        "average" => ws.iter().sum::<f64>() / 2.0,
                        "min" => ws.iter().copied().reduce(f64::min).unwrap_or(f32::MAX as f64),
                        _ => ws.iter().copied().reduce(f64::max).unwrap_or(f32::MIN as f64),
                    };
                    assert_eq!(got[2 * r + k] as f64, want, "{agg} row {row:?} target {k}");
                }
            }
        }
    }

    #[test]
    fn nan_goes_the_false_way_unless_missing_tracks_true() {
        let x = t(&[1, 2], vec![f64::NAN, 1.0]);
        // x0 NaN: `NaN <= 1.5` is false, so tree A goes to node 1 (x1 = 1, not a member: leaf 2).
        let (_, got) = run_vec::<f64>(&*op(NAME, two_trees("sum")), std::slice::from_ref(&x)).unwrap();
        assert_eq!(got, [100.0 + 1000.0, 0.0]);
        let a = two_trees("sum").with("nodes_missing_value_tracks_true", vec![1i64, 0, 0]);
        let (_, got) = run_vec::<f64>(&*op(NAME, a), &[x]).unwrap();
        assert_eq!(got, [1.0 + 1000.0, 0.0]);
    }

    #[test]
    fn bad_trees_and_inputs_are_errors() {
        let r = OpRegistry::builtin();
        let bad = |a: Attrs| r.make(NAME, &a).unwrap_err();
        assert_cause!(
            bad(two_trees("sum").with("nodes_modes", vec![0i64, 6])),
            Attr,
            "nodes_featureids"
        );
        assert_cause!(
            bad(two_trees("sum").with("nodes_modes", vec![0i64, 6, 7])),
            Attr,
            "nodes_modes"
        );
        assert_cause!(
            bad(two_trees("sum").with("leaf_targetids", vec![0i64, 1, 0, 0, 2])),
            Attr,
            "n_targets"
        );
        assert_cause!(
            bad(two_trees("sum").with("nodes_truenodeids", vec![5i64, 1, 3])),
            Attr,
            "nodes_truenodeids"
        );
        assert_cause!(
            bad(two_trees("sum").with("tree_roots", vec![3i64])),
            Attr,
            "tree_roots"
        );
        assert_cause!(
            bad(two_trees("sum").with("aggregate", "median")),
            Attr,
            "aggregate"
        );
        assert_cause!(
            bad(two_trees("sum").with("membership_values", float_list(&[]))),
            Attr,
            "membership_values"
        );
        // Node 0's false branch back to itself: a cycle.
        let cyc = two_trees("sum")
            .with("nodes_falsenodeids", vec![0i64, 2, 4])
            .with("tree_roots", vec![0i64]);
        let e = run_vec::<f64>(&*op(NAME, cyc), &[t(&[1, 2], vec![9.0f64, 0.0])]).unwrap_err();
        assert_cause!(e, Attr, "cycle");
        let v = op(NAME, two_trees("sum"));
        assert_cause!(
            run_vec::<f64>(&*v, &[t(&[2, 1], vec![1.0f64, 2.0])]).unwrap_err(),
            Index,
            "feature 1"
        );
        assert_cause!(
            run_vec::<f64>(&*v, &[t(&[2], vec![1.0f64, 2.0])]).unwrap_err(),
            Rank,
            "[N, F]"
        );
        assert_cause!(
            run_vec::<i64>(&*v, &[t(&[1, 2], vec![1i64, 2])]).unwrap_err(),
            DType,
            "float"
        );
    }
}
