//! `tile(x)`: numpy's `np.tile` with one repeat count per axis (attr
//! `repeats`, as many as `x` has axes), any dtype. Output axis `k` has
//! `d_k · repeats_k` elements; element `o` reads input element `o mod d_k`.

use std::sync::Arc;

use crate::error::{attr_err, Error, Result};
use crate::ops::pad::{remap, AxisMaps};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `tile` op.
#[derive(Clone, Debug)]
pub struct Tile {
    pub repeats: Vec<usize>,
}

impl Tile {
    fn check_rank(&self, r: usize) -> Result<()> {
        if self.repeats.len() != r {
            return attr_err(format!(
                "op 'tile': attr 'repeats' has {} values, the input has {r} axes",
                self.repeats.len()
            ));
        }
        Ok(())
    }
}

impl Op for Tile {
    fn name(&self) -> &str {
        "tile"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let shape = match &x.shape {
            None => None,
            Some(s) => {
                self.check_rank(s.len())?;
                Some(
                    s.iter()
                        .zip(&self.repeats)
                        .map(|(&d, &n)| if d < 0 { -1 } else { d * n as i64 })
                        .collect(),
                )
            }
        };
        Ok(vec![TypeInfo::new(x.dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        self.check_rank(x.ndim())?;
        let shape: Vec<usize> = x.shape().iter().zip(&self.repeats).map(|(d, n)| d * n).collect();
        let maps: AxisMaps = x
            .shape()
            .iter()
            .zip(&shape)
            .map(|(&d, &n)| (0..n).map(|o| Some(o % d)).collect())
            .collect();
        let out = ctx.output(0, x.dtype(), &shape)?;
        crate::dispatch_all!(x.dtype(), T => remap::<T>(x, &out, &maps, T::default())?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("repeats", self.repeats.clone())
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("tile", |a: &Attrs| {
        a.only("tile", &["repeats"])?;
        let repeats = a
            .usize_list("repeats")?
            .ok_or_else(|| Error::Attr("op 'tile' needs attr 'repeats'".into()))?;
        Ok(Arc::new(Tile { repeats }) as Arc<dyn Op>)
    });
}
