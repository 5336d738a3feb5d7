//! `full`: a new tensor of attr `shape` and `dtype` (default f32) with every
//! element attr `value` (default 0). ONNX's ConstantOfShape imports to it
//! when the result is too large to store in the case as a constant.

use std::sync::Arc;

use ndarray::ArrayViewMutD;

use crate::dtype::{DType, Element};
use crate::error::{attr_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

#[derive(Clone, Debug)]
pub struct Full {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub value: f64,
}

fn fill<T: Element>(out: &Tensor, v: f64) -> Result<()> {
    out.write(|mut o: ArrayViewMutD<'_, T>| o.fill(T::from_f64(v)))
}

impl Op for Full {
    fn name(&self) -> &str {
        "full"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(0)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        Ok(vec![TypeInfo::known(self.dtype, &self.shape)])
    }
    fn compute(&self, _inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let out = ctx.output(0, self.dtype, &self.shape)?;
        crate::dispatch_all!(self.dtype, T => fill::<T>(&out, self.value)?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("shape", self.shape.clone())
            .with("dtype", self.dtype.name())
            .with("value", self.value)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("full", |a: &Attrs| {
        a.only("full", &["shape", "dtype", "value"])?;
        let Some(shape) = a.usize_list("shape")? else {
            return attr_err("op 'full' needs attr 'shape'");
        };
        crate::tensor::limit::check_shape(&shape)?;
        Ok(Arc::new(Full {
            shape,
            dtype: a.dtype("dtype")?.unwrap_or(DType::F32),
            value: a.f64("value")?.unwrap_or(0.0),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_every_element_with_the_value_in_the_dtype() {
        let op = OpRegistry::builtin()
            .make(
                "full",
                &Attrs::new()
                    .with("shape", vec![2, 3])
                    .with("dtype", "i32")
                    .with("value", 7),
            )
            .unwrap();
        let t = op.compute(&[], &mut OpCtx::new("f")).unwrap().remove(0);
        assert_eq!(t.shape(), &[2, 3]);
        assert!(t.to_array::<i32>().unwrap().iter().all(|&v| v == 7));
        let e = OpRegistry::builtin().make("full", &Attrs::new()).err().unwrap();
        assert!(e.to_string().contains("'shape'"), "{e}");
    }
}
