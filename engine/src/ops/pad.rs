//! `pad(x)`: numpy's `np.pad` with ONNX's attrs, any dtype.
//!
//! - `pads`: `[b_0, …, b_{r-1}, e_0, …, e_{r-1}]`, elements added before and
//!   after each axis (ONNX's order); a negative count crops instead. Without
//!   the attr the pads are input 1 (i64), read when the op runs, for the
//!   axes attr `axes` names (default all; `[b…, e…]` per named axis), so
//!   the output's shape is decided then.
//! - `mode`: `constant` (fill with `value`, default 0), `reflect` (mirror
//!   without repeating the edge), `edge` (repeat the edge), `wrap` (cyclic).
//!
//! Output axis `k` has `d_k + b_k + e_k` elements; element `o` reads input
//! element `o - b_k` mapped back into range by the mode. Reflect, edge and
//! wrap need a non-empty axis to read from.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD};

use crate::dtype::Element;
use crate::error::{attr_err, op_err, Error, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// How out-of-range positions are filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    Constant,
    Reflect,
    Edge,
    Wrap,
}

impl PadMode {
    pub fn parse(s: &str) -> Result<PadMode> {
        Ok(match s {
            "constant" => PadMode::Constant,
            "reflect" => PadMode::Reflect,
            "edge" => PadMode::Edge,
            "wrap" => PadMode::Wrap,
            _ => {
                return attr_err(format!(
                    "op 'pad': attr 'mode': unknown value '{s}' (constant, reflect, edge, wrap)"
                ))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            PadMode::Constant => "constant",
            PadMode::Reflect => "reflect",
            PadMode::Edge => "edge",
            PadMode::Wrap => "wrap",
        }
    }

    /// The input position output position `i` (in input coordinates) reads
    /// from on an axis of `d` elements; `None` for the fill value.
    fn source(self, i: i64, d: i64) -> Option<usize> {
        if (0..d).contains(&i) {
            return Some(i as usize);
        }
        if d == 0 {
            return None;
        }
        let j = match self {
            PadMode::Constant => return None,
            PadMode::Edge => i.clamp(0, d - 1),
            PadMode::Wrap => i.rem_euclid(d),
            PadMode::Reflect if d == 1 => 0,
            PadMode::Reflect => {
                let p = 2 * (d - 1);
                let m = i.rem_euclid(p);
                if m < d {
                    m
                } else {
                    p - m
                }
            }
        };
        Some(j as usize)
    }
}

/// For every output axis, the input position each output position reads
/// (`None`: the fill value).
pub(crate) type AxisMaps = Vec<Vec<Option<usize>>>;

/// `out[o] = x[maps[0][o_0], …]`, or `fill` where some axis maps to `None`.
pub(crate) fn remap<T: Element>(x: &Tensor, out: &Tensor, maps: &AxisMaps, fill: T) -> Result<()> {
    let mut src = vec![0usize; maps.len()];
    x.read(|xv: ArrayViewD<'_, T>| {
        out.write(|mut ov: ArrayViewMutD<'_, T>| {
            ov.indexed_iter_mut().for_each(|(idx, o)| {
                let mut inside = true;
                for (k, m) in maps.iter().enumerate() {
                    match m[idx[k]] {
                        Some(s) => src[k] = s,
                        None => inside = false,
                    }
                }
                *o = if inside { xv[src.as_slice()] } else { fill };
            })
        })
    })??;
    Ok(())
}

/// The `pad` op.
#[derive(Clone, Debug)]
pub struct Pad {
    /// `None`: the pads are input 1.
    pub pads: Option<Vec<i64>>,
    /// The axes input pads are for (default all).
    pub axes: Option<Vec<i64>>,
    pub mode: PadMode,
    pub value: f64,
}

impl Pad {
    /// The pads of every axis: the attr, or input `given` spread over `axes`.
    fn full_pads(&self, rank: usize, given: Option<&[i64]>) -> Result<Vec<i64>> {
        if let Some(p) = &self.pads {
            return Ok(p.clone());
        }
        let given = given.unwrap_or_default();
        let all: Vec<i64> = (0..rank as i64).collect();
        let axes = self.axes.as_ref().unwrap_or(&all);
        if given.len() != 2 * axes.len() {
            return op_err(format!(
                "op 'pad': {} pads for {} axes (two per axis)",
                given.len(),
                axes.len()
            ));
        }
        let mut pads = vec![0; 2 * rank];
        for (k, &a) in axes.iter().enumerate() {
            let a = if a < 0 { a + rank as i64 } else { a };
            if !(0..rank as i64).contains(&a) {
                return op_err(format!(
                    "op 'pad': axis {} is out of range for rank {rank}",
                    axes[k]
                ));
            }
            pads[a as usize] = given[k];
            pads[rank + a as usize] = given[axes.len() + k];
        }
        Ok(pads)
    }

    fn out_shape(&self, shape: &[i64], pads: &[i64]) -> Result<Vec<i64>> {
        let r = shape.len();
        if pads.len() != 2 * r {
            return attr_err(format!(
                "op 'pad': attr 'pads' has {} values, a rank-{r} input needs {}",
                pads.len(),
                2 * r
            ));
        }
        shape
            .iter()
            .enumerate()
            .map(|(k, &d)| {
                if d < 0 {
                    return Ok(-1);
                }
                let n = d + pads[k] + pads[r + k];
                if n < 0 {
                    return op_err(format!(
                        "op 'pad': pads {} and {} crop axis {k} of {d} elements below zero",
                        pads[k],
                        pads[r + k]
                    ));
                }
                if d == 0 && n > 0 && self.mode != PadMode::Constant {
                    return op_err(format!(
                        "op 'pad': mode '{}' cannot pad the empty axis {k}",
                        self.mode.name()
                    ));
                }
                Ok(n)
            })
            .collect()
    }
}

impl Op for Pad {
    fn name(&self) -> &str {
        "pad"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(if self.pads.is_some() { 1 } else { 2 })
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        if let Some(p) = inputs.get(1) {
            if p.dtype != crate::dtype::DType::I64 || p.rank().is_some_and(|r| r != 1) {
                return op_err(format!(
                    "op 'pad': pads (input 1) must be an i64 vector, got {}",
                    p.dtype
                ));
            }
        }
        let Some(s) = &x.shape else {
            return Ok(vec![TypeInfo::new(x.dtype, None)]);
        };
        let given = inputs.get(1).and_then(|p| p.value.as_deref());
        let shape = if self.pads.is_some() || given.is_some() {
            self.out_shape(s, &self.full_pads(s.len(), given)?)?
        } else {
            // Which axes change is known; by how much, only when it runs.
            let all: Vec<i64> = (0..s.len() as i64).collect();
            let mut out = s.clone();
            for &a in self.axes.as_ref().unwrap_or(&all) {
                let a = if a < 0 { a + s.len() as i64 } else { a };
                if let Some(d) = out.get_mut(a as usize) {
                    *d = -1;
                }
            }
            out
        };
        Ok(vec![TypeInfo::new(x.dtype, Some(shape))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let dims: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
        let given: Option<Vec<i64>> = match inputs.get(1) {
            Some(p) => Some(p.to_array::<i64>()?.iter().copied().collect()),
            None => None,
        };
        let pads = self.full_pads(dims.len(), given.as_deref())?;
        let shape: Vec<usize> = self
            .out_shape(&dims, &pads)?
            .iter()
            .map(|&d| d as usize)
            .collect();
        let maps: AxisMaps = shape
            .iter()
            .enumerate()
            .map(|(k, &n)| {
                (0..n as i64)
                    .map(|o| self.mode.source(o - pads[k], dims[k]))
                    .collect()
            })
            .collect();
        let out = ctx.output(0, x.dtype(), &shape)?;
        let v = self.value;
        crate::dispatch_all!(x.dtype(), T => remap::<T>(x, &out, &maps, T::from_f64(v))?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let mut a = Attrs::new();
        if let Some(p) = &self.pads {
            a = a.with("pads", p.clone());
        }
        if let Some(axes) = &self.axes {
            a = a.with("axes", axes.clone());
        }
        a.with("mode", self.mode.name()).with("value", self.value)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("pad", |a: &Attrs| {
        a.only("pad", &["pads", "axes", "mode", "value"])?;
        let pads = a.i64_list("pads")?;
        let axes = a.i64_list("axes")?;
        if pads.is_some() && axes.is_some() {
            return attr_err("op 'pad': attr 'axes' goes with pads given as input 1, not attr 'pads'");
        }
        let mode =
            match a.0.get("mode") {
                None => PadMode::Constant,
                Some(v) => PadMode::parse(v.as_str().ok_or_else(|| {
                    Error::Attr(format!("op 'pad': attr 'mode': expected a string, got {v}"))
                })?)?,
            };
        let value = a.f64("value")?.unwrap_or(0.0);
        Ok(Arc::new(Pad {
            pads,
            axes,
            mode,
            value,
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::PadMode;
    use crate::ops::testutil::{op, run_vec, t};
    use crate::ops::Attrs;

    #[test]
    fn pads_given_as_an_input_for_named_axes() {
        // Axis 1 of [2, 2] padded by 1 before and 2 after, read when it runs.
        let o = op("pad", Attrs::new().with("axes", vec![-1]).with("value", 9.0));
        let x = t(&[2, 2], vec![1i64, 2, 3, 4]);
        let (s, v) = run_vec::<i64>(&*o, &[x.clone(), t(&[2], vec![1i64, 2])]).unwrap();
        assert_eq!(s, [2, 5]);
        assert_eq!(v, [9, 1, 2, 9, 9, 9, 3, 4, 9, 9]);
        // Negative pads crop.
        let (s, v) = run_vec::<i64>(&*o, &[x.clone(), t(&[2], vec![-1i64, 0])]).unwrap();
        assert_eq!((s, v), (vec![2, 1], vec![2, 4]));
        let e = run_vec::<i64>(&*o, &[x, t(&[3], vec![0i64; 3])]).unwrap_err();
        assert!(matches!(e, crate::Error::Op(_)), "{e:?}");
    }

    #[test]
    fn sources_follow_numpy_pad_modes() {
        // np.pad(arange(3), 4, mode) read back as input positions.
        let row = |m: PadMode| -> Vec<Option<usize>> { (-4..7).map(|i| m.source(i, 3)).collect() };
        let s = |v: &[usize]| v.iter().map(|&i| Some(i)).collect::<Vec<_>>();
        assert_eq!(row(PadMode::Reflect), s(&[0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2]));
        assert_eq!(row(PadMode::Edge), s(&[0, 0, 0, 0, 0, 1, 2, 2, 2, 2, 2]));
        assert_eq!(row(PadMode::Wrap), s(&[2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0]));
        assert_eq!(PadMode::Constant.source(-1, 3), None);
        assert_eq!(PadMode::Reflect.source(-2, 1), Some(0));
    }
}
