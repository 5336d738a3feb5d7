//! `rotary_embedding(x, cos, sin, [position_ids])` (ONNX RotaryEmbedding):
//! rotary positional embeddings. x is `[batch, heads, len, head]`, or
//! `[batch, len, heads·head]` with attr `num_heads`. The first `rot` dims
//! of each head (attr `rotary_dim`, 0: the whole head; even) are rotated
//! in pairs `(x1, x2)` by the angle of the token's position:
//! `(cos·x1 − sin·x2, sin·x1 + cos·x2)`; the other dims are copied. The
//! pairs are the two halves of the rotated dims, or with attr `interleaved`
//! neighbours `(2i, 2i+1)`.
//!
//! `cos` and `sin` hold `rot / 2` values per position: `[max_pos, rot/2]`
//! indexed by `position_ids` (i64 `[batch, len]`, each checked to be in
//! range), or `[batch, len, rot/2]` without them. f16 computes in f32.

use std::sync::Arc;

use crate::dtype::{DType, Float};
use crate::error::{dtype_err, index_err, rank_err, shape_err, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

const NAME: &str = "rotary_embedding";

/// The `rotary_embedding` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rotary {
    pub interleaved: bool,
    /// 0: the whole head.
    pub rotary_dim: usize,
    /// Heads of a 3-D x (0 for 4-D x).
    pub num_heads: usize,
}

/// The layout of one call.
struct Plan {
    batch: usize,
    heads: usize,
    len: usize,
    head: usize,
    rot: usize,
    /// x is `[batch, len, heads·head]`.
    packed: bool,
}

impl Rotary {
    fn check_types(&self, ins: &[TypeInfo]) -> Result<()> {
        let dt = ins[0].dtype;
        if !dt.is_float() {
            return dtype_err(format!("op '{NAME}': x must be a float tensor, got {dt}"));
        }
        for (i, what) in [(1, "cos"), (2, "sin")] {
            if ins[i].dtype != dt {
                return dtype_err(format!(
                    "op '{NAME}': {what} (input {i}) is {}, x is {dt}",
                    ins[i].dtype
                ));
            }
        }
        if ins.len() > 3 && ins[3].dtype != DType::I64 {
            return dtype_err(format!(
                "op '{NAME}': position_ids must be i64, got {}",
                ins[3].dtype
            ));
        }
        match ins[0].rank() {
            Some(3) if self.num_heads == 0 => {
                rank_err(format!("op '{NAME}': a 3-D x needs attr 'num_heads'"))
            }
            Some(3 | 4) | None => Ok(()),
            Some(_) => rank_err(format!(
                "op '{NAME}': x must be 3-D or 4-D, got {}",
                ins[0].shape_string()
            )),
        }
    }

    fn plan(&self, ins: &[Tensor]) -> Result<Plan> {
        let s = ins[0].shape();
        let (batch, heads, len, head, packed) = if s.len() == 4 {
            (s[0], s[1], s[2], s[3], false)
        } else {
            let h = self.num_heads;
            if !s[2].is_multiple_of(h) {
                return shape_err(format!(
                    "op '{NAME}': x's hidden size {} is not a multiple of its {h} heads",
                    s[2]
                ));
            }
            (s[0], h, s[1], s[2] / h, true)
        };
        let rot = if self.rotary_dim == 0 {
            head
        } else {
            self.rotary_dim
        };
        if rot > head || !rot.is_multiple_of(2) {
            return shape_err(format!(
                "op '{NAME}': the rotated dims ({rot}) must be even and at most the head size {head}"
            ));
        }
        let (c, sn) = (ins[1].shape(), ins[2].shape());
        let want: Vec<usize> = match ins.get(3) {
            Some(p) => {
                if p.shape() != [batch, len] {
                    return shape_err(format!(
                        "op '{NAME}': position_ids {:?} must be [{batch}, {len}]",
                        p.shape()
                    ));
                }
                vec![c.first().copied().unwrap_or(0), rot / 2]
            }
            None => vec![batch, len, rot / 2],
        };
        if c != want || sn != want {
            return shape_err(format!("op '{NAME}': cos {c:?} and sin {sn:?} must be {want:?}"));
        }
        Ok(Plan {
            batch,
            heads,
            len,
            head,
            rot,
            packed,
        })
    }
}

fn kernel<T: Float>(op: &Rotary, ins: &[Tensor], p: &Plan, out: &Tensor) -> Result<()> {
    let x = ins[0].to_array::<T>()?;
    let cos = ins[1].to_array::<T>()?;
    let sin = ins[2].to_array::<T>()?;
    let (xs, cs, ss) = (
        x.as_slice().unwrap_or_default(),
        cos.as_slice().unwrap_or_default(),
        sin.as_slice().unwrap_or_default(),
    );
    let half = p.rot / 2;
    // The row of cos/sin for each (batch, position).
    let rows: Vec<usize> = match ins.get(3) {
        Some(ids) => {
            let max = ins[1].shape()[0];
            let ids = ids.to_array::<i64>()?;
            ids.iter()
                .map(|&i| {
                    usize::try_from(i).ok().filter(|&u| u < max).map_or_else(
                        || {
                            index_err(format!(
                                "op '{NAME}': position id {i} is out of range for {max} positions"
                            ))
                        },
                        Ok,
                    )
                })
                .collect::<Result<_>>()?
        }
        None => (0..p.batch * p.len).collect(),
    };
    let mut y = vec![T::zero(); xs.len()];
    for (r, (xr, yr)) in xs
        .chunks(p.head.max(1))
        .zip(y.chunks_mut(p.head.max(1)))
        .enumerate()
    {
        // The row's batch and position in x's C order.
        let (b, t) = if p.packed {
            (r / (p.len * p.heads), (r / p.heads) % p.len)
        } else {
            (r / (p.heads * p.len), r % p.len)
        };
        let at = rows[b * p.len + t] * half;
        let (c, s) = (&cs[at..at + half], &ss[at..at + half]);
        for i in 0..half {
            let (i1, i2) = if op.interleaved {
                (2 * i, 2 * i + 1)
            } else {
                (i, i + half)
            };
            let (x1, x2) = (xr[i1], xr[i2]);
            yr[i1] = c[i] * x1 - s[i] * x2;
            yr[i2] = s[i] * x1 + c[i] * x2;
        }
        yr[p.rot..].copy_from_slice(&xr[p.rot..]);
    }
    out.write_c_order(|o: &mut [T]| o.copy_from_slice(&y))
}

impl Op for Rotary {
    fn name(&self) -> &str {
        NAME
    }
    fn arity(&self) -> Arity {
        Arity { min: 3, max: Some(4) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check_types(inputs)?;
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.check_types(&tys)?;
        let p = self.plan(inputs)?;
        let x = &inputs[0];
        let out = ctx.output(0, x.dtype(), x.shape())?;
        match x.dtype() {
            DType::F32 => kernel::<f32>(self, inputs, &p, &out)?,
            DType::F64 => kernel::<f64>(self, inputs, &p, &out)?,
            d => return dtype_err(format!("op '{NAME}' takes f16, f32 or f64, got {d}")),
        }
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("interleaved", self.interleaved)
            .with("rotary_dim", self.rotary_dim)
            .with("num_heads", self.num_heads)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register(NAME, |a: &Attrs| {
        a.only(NAME, &["interleaved", "rotary_dim", "num_heads"])?;
        let count = |k: &str| -> Result<usize> {
            let v = a.i64(k)?.unwrap_or(0);
            usize::try_from(v).map_or_else(
                |_| crate::error::attr_err(format!("op '{NAME}': attr '{k}' must be at least 0, got {v}")),
                Ok,
            )
        };
        Ok(Arc::new(Rotary {
            interleaved: a.bool("interleaved")?.unwrap_or(false),
            rotary_dim: count("rotary_dim")?,
            num_heads: count("num_heads")?,
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_vec, t};

    fn rot(a: Attrs) -> Arc<dyn Op> {
        op(NAME, a)
    }

    /// One head of 4 dims at one position, angle 90° on pair 0 and 0° on
    /// pair 1: halves pair (x0, x2) and (x1, x3); interleaved pairs (x0, x1)
    /// and (x2, x3).
    #[test]
    fn rotates_halves_or_neighbours() {
        let x = || t(&[1, 1, 1, 4], vec![1.0f32, 2.0, 3.0, 4.0]);
        let cos = || t(&[1, 1, 2], vec![0.0f32, 1.0]);
        let sin = || t(&[1, 1, 2], vec![1.0f32, 0.0]);
        let (_, v) = run_vec::<f32>(&*rot(Attrs::new()), &[x(), cos(), sin()]).unwrap();
        // pair (1, 3) by 90°: (-3, 1); pair (2, 4) unchanged.
        assert_eq!(v, [-3.0, 2.0, 1.0, 4.0]);
        let (_, v) = run_vec::<f32>(
            &*rot(Attrs::new().with("interleaved", true)),
            &[x(), cos(), sin()],
        )
        .unwrap();
        // pair (1, 2) by 90°: (-2, 1); pair (3, 4) unchanged.
        assert_eq!(v, [-2.0, 1.0, 3.0, 4.0]);
    }

    /// Position ids pick rows of the caches; a partial rotation copies the
    /// rest; a 3-D x splits into heads.
    #[test]
    fn position_ids_partial_rotation_and_packed_heads() {
        // [1, 2, 2·4]: two positions, two heads of 4; rotary_dim 2.
        let x = t(&[1, 2, 8], (1..=16).map(|v| v as f64).collect());
        let cos = t(&[3, 1], vec![1.0f64, 0.0, -1.0]);
        let sin = t(&[3, 1], vec![0.0f64, 1.0, 0.0]);
        let ids = t(&[1, 2], vec![2i64, 1]);
        let a = Attrs::new().with("rotary_dim", 2).with("num_heads", 2);
        let (shape, v) = run_vec::<f64>(&*rot(a.clone()), &[x, cos.clone(), sin.clone(), ids]).unwrap();
        assert_eq!(shape, [1, 2, 8]);
        // Position 0 uses row 2 (180°): (x0, x1) -> (-x0, -x1) in each head.
        // Position 1 uses row 1 (90°): (x0, x1) -> (-x1, x0).
        assert_eq!(
            v,
            [-1.0, -2.0, 3.0, 4.0, -5.0, -6.0, 7.0, 8.0, -10.0, 9.0, 11.0, 12.0, -14.0, 13.0, 15.0, 16.0]
        );
        let x = t(&[1, 2, 8], vec![0.0f64; 16]);
        let e = run_vec::<f64>(&*rot(a), &[x, cos, sin, t(&[1, 2], vec![0i64, 3])]).unwrap_err();
        assert_cause!(e, Index, "3");
    }

    #[test]
    fn f16_and_bad_shapes() {
        let h = |v: Vec<f32>, s: &[usize]| t(s, v.into_iter().map(half::f16::from_f32).collect());
        let (_, v) = run_vec::<half::f16>(
            &*rot(Attrs::new()),
            &[
                h(vec![1.0, 2.0], &[1, 1, 1, 2]),
                h(vec![0.0], &[1, 1, 1]),
                h(vec![1.0], &[1, 1, 1]),
            ],
        )
        .unwrap();
        assert_eq!(v, [half::f16::from_f32(-2.0), half::f16::from_f32(1.0)]);
        let x = t(&[1, 1, 1, 4], vec![0.0f32; 4]);
        let c = t(&[1, 1, 1], vec![0.0f32]);
        let e = run_vec::<f32>(&*rot(Attrs::new()), &[x.clone(), c.clone(), c.clone()]).unwrap_err();
        assert_cause!(e, Shape, "cos");
        let x3 = t(&[1, 1, 4], vec![0.0f32; 4]);
        assert_cause!(
            run_vec::<f32>(&*rot(Attrs::new()), &[x3, c.clone(), c]).unwrap_err(),
            Rank,
            "num_heads"
        );
    }
}
