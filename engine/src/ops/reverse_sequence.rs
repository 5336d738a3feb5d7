//! `reverse_sequence(x, sequence_lens)` (ONNX ReverseSequence): for each
//! batch entry `b`, the first `sequence_lens[b]` elements along the time
//! axis are reversed and the rest kept. Attrs `batch_axis` and
//! `time_axis` (0 and 1, either way round; defaults 1 and 0). Any dtype;
//! `sequence_lens` is i64 `[batch]`, each within `[0, time]`.

use std::sync::Arc;

use ndarray::{ArrayViewMutD, Axis};

use crate::dtype::Element;
use crate::error::{attr_err, op_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `reverse_sequence` op.
#[derive(Clone, Debug, PartialEq)]
pub struct ReverseSequence {
    pub batch_axis: usize,
    pub time_axis: usize,
}

impl ReverseSequence {
    fn check(&self, x: &TypeInfo, lens: &TypeInfo) -> Result<()> {
        if x.rank().is_some_and(|r| r < 2) {
            return op_err(format!(
                "op 'reverse_sequence': x must have rank 2 or more, got {}",
                x.shape_string()
            ));
        }
        if lens.dtype != crate::dtype::DType::I64 || lens.rank().is_some_and(|r| r != 1) {
            return op_err(format!(
                "op 'reverse_sequence': sequence_lens must be i64 [batch], got {} {}",
                lens.dtype,
                lens.shape_string()
            ));
        }
        Ok(())
    }
}

fn reverse<T: Element>(op: &ReverseSequence, x: &Tensor, lens: &[i64], out: &Tensor) -> Result<()> {
    let src = x.to_array::<T>()?;
    out.write(|mut o: ArrayViewMutD<'_, T>| {
        o.assign(&src);
        for (b, &len) in lens.iter().enumerate() {
            let mut ob = o.index_axis_mut(Axis(op.batch_axis), b);
            let sb = src.index_axis(Axis(op.batch_axis), b);
            // The time axis, with the batch axis gone.
            let t = if op.time_axis > op.batch_axis {
                op.time_axis - 1
            } else {
                op.time_axis
            };
            let len = len as usize;
            for i in 0..len {
                ob.index_axis_mut(Axis(t), i)
                    .assign(&sb.index_axis(Axis(t), len - 1 - i));
            }
        }
    })
}

impl Op for ReverseSequence {
    fn name(&self) -> &str {
        "reverse_sequence"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check(&inputs[0], &inputs[1])?;
        Ok(vec![TypeInfo::new(inputs[0].dtype, inputs[0].shape.clone())])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let (x, l) = (&inputs[0], &inputs[1]);
        self.check(&TypeInfo::of(x), &TypeInfo::of(l))?;
        let lens: Vec<i64> = l.to_array::<i64>()?.iter().copied().collect();
        let (batch, time) = (x.shape()[self.batch_axis], x.shape()[self.time_axis]);
        if lens.len() != batch || lens.iter().any(|&n| n < 0 || n as usize > time) {
            return op_err(format!(
                "op 'reverse_sequence': sequence_lens {lens:?} must hold {batch} lengths within [0, {time}]"
            ));
        }
        let out = ctx.output(0, x.dtype(), x.shape())?;
        crate::dispatch_all!(x.dtype(), T => reverse::<T>(self, x, &lens, &out)?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("batch_axis", self.batch_axis)
            .with("time_axis", self.time_axis)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("reverse_sequence", |a: &Attrs| {
        a.only("reverse_sequence", &["batch_axis", "time_axis"])?;
        let batch = a.i64("batch_axis")?.unwrap_or(1);
        let time = a.i64("time_axis")?.unwrap_or(0);
        if !matches!((batch, time), (0, 1) | (1, 0)) {
            return attr_err(format!(
                "op 'reverse_sequence': batch_axis and time_axis must be 0 and 1, got {batch} and {time}"
            ));
        }
        Ok(Arc::new(ReverseSequence {
            batch_axis: batch as usize,
            time_axis: time as usize,
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    #[test]
    fn reverses_each_batch_entrys_prefix_along_time() {
        // time along axis 0, batch along axis 1: column b reversed over its first lens[b] rows.
        let x = t(&[3, 2], vec![0i64, 10, 1, 11, 2, 12]);
        let lens = t(&[2], vec![3i64, 2]);
        let o = op(
            "reverse_sequence",
            Attrs::new().with("batch_axis", 1).with("time_axis", 0),
        );
        let (_, v) = run_vec::<i64>(&*o, &[x.clone(), lens]).unwrap();
        assert_eq!(v, [2, 11, 1, 10, 0, 12]);
        let o = op(
            "reverse_sequence",
            Attrs::new().with("batch_axis", 0).with("time_axis", 1),
        );
        let (_, v) = run_vec::<i64>(
            &*o,
            &[t(&[2, 3], vec![0i64, 1, 2, 3, 4, 5]), t(&[2], vec![1i64, 3])],
        )
        .unwrap();
        assert_eq!(v, [0, 1, 2, 5, 4, 3]);
        let e = run_vec::<i64>(&*o, &[t(&[2, 3], vec![0i64; 6]), t(&[2], vec![4i64, 0])]).unwrap_err();
        assert!(matches!(e, crate::Error::Op(_)), "{e:?}");
    }
}
