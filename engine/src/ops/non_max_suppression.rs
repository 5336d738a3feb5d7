//! `non_max_suppression(boxes, scores[, max_per_class, iou_threshold,
//! score_threshold])` (ONNX NonMaxSuppression): for each batch entry and
//! class, boxes in order of falling score (ties: the lower index first),
//! each kept unless its IoU with a box already kept exceeds
//! `iou_threshold`, until `max_per_class` are kept. Boxes scoring at or
//! below `score_threshold` (when given) are never candidates.
//!
//! boxes `[B, N, 4]` are `[y1, x1, y2, x2]` (either corner first; attr
//! `center_point_box = 0`) or `[x_centre, y_centre, w, h]` (1); scores are
//! `[B, C, N]`. The output is i64 `[selected, 3]` of
//! `(batch, class, box)`, its length decided when it runs. The scalar
//! inputs are optional (absent: 0 boxes, IoU 0, no score threshold).
//! IoU is computed in f64; boxes of no area suppress nothing.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{attr_err, op_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `non_max_suppression` op.
#[derive(Clone, Debug, PartialEq)]
pub struct NonMaxSuppression {
    pub center_point_box: bool,
}

/// A box as `(x_min, y_min, x_max, y_max)`.
type Corners = [f64; 4];

impl NonMaxSuppression {
    fn corners(&self, b: &[f64]) -> Corners {
        if self.center_point_box {
            let (hw, hh) = (b[2] / 2.0, b[3] / 2.0);
            [b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh]
        } else {
            [b[1].min(b[3]), b[0].min(b[2]), b[1].max(b[3]), b[0].max(b[2])]
        }
    }

    fn check(&self, inputs: &[TypeInfo]) -> Result<()> {
        let (b, s) = (&inputs[0], &inputs[1]);
        if !b.dtype.is_float() || s.dtype != b.dtype {
            return op_err(format!(
                "op 'non_max_suppression': boxes and scores must be of one float dtype, got {} and {}",
                b.dtype, s.dtype
            ));
        }
        if let (Some(bs), Some(ss)) = (&b.shape, &s.shape) {
            let known = |a: i64, b: i64| a < 0 || b < 0 || a == b;
            if bs.len() != 3
                || ss.len() != 3
                || (bs[2] >= 0 && bs[2] != 4)
                || !known(bs[0], ss[0])
                || !known(bs[1], ss[2])
            {
                return op_err(format!(
                    "op 'non_max_suppression': boxes must be [B, N, 4] and scores [B, C, N], got {} and {}",
                    b.shape_string(),
                    s.shape_string()
                ));
            }
        }
        Ok(())
    }
}

/// Whether `a` and `b` overlap by more than `threshold` IoU.
fn suppresses(a: &Corners, b: &Corners, threshold: f64) -> bool {
    let (w, h) = (a[2].min(b[2]) - a[0].max(b[0]), a[3].min(b[3]) - a[1].max(b[1]));
    if w <= 0.0 || h <= 0.0 {
        return false;
    }
    let inter = w * h;
    let (area_a, area_b) = ((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]));
    let union = area_a + area_b - inter;
    if area_a <= 0.0 || area_b <= 0.0 || union <= 0.0 {
        return false;
    }
    inter / union > threshold
}

/// The first element of an optional scalar input, if it has one.
fn first(inputs: &[Tensor], k: usize) -> Result<Option<f64>> {
    match inputs.get(k) {
        Some(t) if t.size() > 0 => Ok(t.to_f64_vec()?.first().copied()),
        _ => Ok(None),
    }
}

impl Op for NonMaxSuppression {
    fn name(&self) -> &str {
        "non_max_suppression"
    }
    fn arity(&self) -> Arity {
        Arity { min: 2, max: Some(5) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check(inputs)?;
        Ok(vec![TypeInfo::new(DType::I64, Some(vec![-1, 3]))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.check(&tys)?;
        let max = first(inputs, 2)?.map_or(0, |m| m.max(0.0) as usize);
        let iou = first(inputs, 3)?.unwrap_or(0.0);
        let floor = first(inputs, 4)?;
        let (boxes, scores) = (inputs[0].to_f64_vec()?, inputs[1].to_f64_vec()?);
        let (nb, nc, n) = (inputs[1].shape()[0], inputs[1].shape()[1], inputs[1].shape()[2]);
        let mut selected: Vec<i64> = Vec::new();
        for b in 0..nb {
            let corners: Vec<Corners> = (0..n)
                .map(|i| self.corners(&boxes[(b * n + i) * 4..][..4]))
                .collect();
            for c in 0..nc {
                let s = &scores[(b * nc + c) * n..][..n];
                let mut order: Vec<usize> = (0..n).filter(|&i| floor.is_none_or(|f| s[i] > f)).collect();
                // Falling score; a stable sort keeps the lower index first on ties.
                order.sort_by(|&i, &j| s[j].total_cmp(&s[i]));
                let mut kept: Vec<usize> = Vec::new();
                for i in order {
                    if kept.len() >= max {
                        break;
                    }
                    if kept.iter().all(|&k| !suppresses(&corners[i], &corners[k], iou)) {
                        kept.push(i);
                        selected.extend([b as i64, c as i64, i as i64]);
                    }
                }
            }
        }
        let out = ctx.output(0, DType::I64, &[selected.len() / 3, 3])?;
        out.assign(&Tensor::from_vec(&[selected.len() / 3, 3], selected)?)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("center_point_box", self.center_point_box as i64)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("non_max_suppression", |a: &Attrs| {
        a.only("non_max_suppression", &["center_point_box"])?;
        let c = a.i64("center_point_box")?.unwrap_or(0);
        if !matches!(c, 0 | 1) {
            return attr_err(format!(
                "op 'non_max_suppression': attr 'center_point_box' must be 0 or 1, got {c}"
            ));
        }
        Ok(Arc::new(NonMaxSuppression {
            center_point_box: c == 1,
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    fn nms(inputs: &[Tensor]) -> (Vec<usize>, Vec<i64>) {
        run_vec::<i64>(&*op("non_max_suppression", Attrs::new()), inputs).unwrap()
    }

    #[test]
    fn keeps_the_best_of_overlapping_boxes_up_to_the_limit() {
        // Boxes 0 and 1 overlap (IoU 0.81); box 2 is apart.
        let boxes = t(
            &[1, 3, 4],
            vec![0.0f32, 0.0, 1.0, 1.0, 0.0, 0.1, 1.0, 1.1, 0.0, 10.0, 1.0, 11.0],
        );
        let scores = t(&[1, 1, 3], vec![0.9f32, 0.95, 0.8]);
        let limit = |m: i64| t(&[1], vec![m]);
        let thr = |v: f32| t(&[1], vec![v]);
        let (s, v) = nms(&[boxes.clone(), scores.clone(), limit(3), thr(0.5)]);
        assert_eq!(s, [2, 3]);
        assert_eq!(v, [0, 0, 1, 0, 0, 2]);
        // A higher IoU threshold keeps all three, in score order.
        let (_, v) = nms(&[boxes.clone(), scores.clone(), limit(3), thr(0.9)]);
        assert_eq!(v, [0, 0, 1, 0, 0, 0, 0, 0, 2]);
        // The limit, and the score threshold (strictly above).
        let (_, v) = nms(&[boxes.clone(), scores.clone(), limit(1), thr(0.9)]);
        assert_eq!(v, [0, 0, 1]);
        let (s, _) = nms(&[boxes.clone(), scores.clone(), limit(3), thr(0.9), thr(0.95)]);
        assert_eq!(s, [0, 3]);
        // No limit given: nothing is selected.
        let (s, _) = nms(&[boxes, scores]);
        assert_eq!(s, [0, 3]);
    }

    #[test]
    fn centre_boxes_and_flipped_corners_measure_the_same_overlap() {
        let a = NonMaxSuppression {
            center_point_box: true,
        }
        .corners(&[1.0, 2.0, 2.0, 4.0]);
        assert_eq!(a, [0.0, 0.0, 2.0, 4.0]);
        let b = NonMaxSuppression {
            center_point_box: false,
        }
        .corners(&[4.0, 2.0, 0.0, 0.0]);
        assert_eq!(b, a);
        assert!(suppresses(&a, &b, 0.99));
        assert!(!suppresses(&a, &[2.0, 0.0, 3.0, 1.0], 0.0));
    }
}
