//! `pad(x)`: numpy's `np.pad` with ONNX's attrs, any dtype.
//!
//! - `pads`: `[b_0, …, b_{r-1}, e_0, …, e_{r-1}]`, elements added before and
//!   after each axis (ONNX's order); a negative count crops instead.
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
    pub pads: Vec<i64>,
    pub mode: PadMode,
    pub value: f64,
}

impl Pad {
    fn out_shape(&self, shape: &[i64]) -> Result<Vec<i64>> {
        let r = shape.len();
        if self.pads.len() != 2 * r {
            return attr_err(format!(
                "op 'pad': attr 'pads' has {} values, a rank-{r} input needs {}",
                self.pads.len(),
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
                let n = d + self.pads[k] + self.pads[r + k];
                if n < 0 {
                    return op_err(format!(
                        "op 'pad': pads {} and {} crop axis {k} of {d} elements below zero",
                        self.pads[k],
                        self.pads[r + k]
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
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let shape = x.shape.as_ref().map(|s| self.out_shape(s)).transpose()?;
        Ok(vec![TypeInfo::new(x.dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        let dims: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
        let shape: Vec<usize> = self.out_shape(&dims)?.iter().map(|&d| d as usize).collect();
        let maps: AxisMaps = shape
            .iter()
            .enumerate()
            .map(|(k, &n)| {
                (0..n as i64)
                    .map(|o| self.mode.source(o - self.pads[k], dims[k]))
                    .collect()
            })
            .collect();
        let out = ctx.output(0, x.dtype(), &shape)?;
        let v = self.value;
        crate::dispatch_all!(x.dtype(), T => remap::<T>(x, &out, &maps, T::from_f64(v))?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("pads", self.pads.clone())
            .with("mode", self.mode.name())
            .with("value", self.value)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("pad", |a: &Attrs| {
        a.only("pad", &["pads", "mode", "value"])?;
        let pads = a
            .i64_list("pads")?
            .ok_or_else(|| Error::Attr("op 'pad' needs attr 'pads'".into()))?;
        let mode =
            match a.0.get("mode") {
                None => PadMode::Constant,
                Some(v) => PadMode::parse(v.as_str().ok_or_else(|| {
                    Error::Attr(format!("op 'pad': attr 'mode': expected a string, got {v}"))
                })?)?,
            };
        let value = a.f64("value")?.unwrap_or(0.0);
        Ok(Arc::new(Pad { pads, mode, value }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::PadMode;

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
