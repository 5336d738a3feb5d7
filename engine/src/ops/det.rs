//! `det(x)` (ONNX Det): the determinant of each `[M, M]` matrix in the
//! last two axes of x, giving x's shape without them. Float dtypes; LU
//! factorization with partial pivoting in f64, rounded once.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{op_err, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `det` op.
#[derive(Clone, Debug, PartialEq)]
pub struct Det;

/// The determinant of the row-major `n × n` matrix `a` (overwritten).
pub fn determinant(a: &mut [f64], n: usize) -> f64 {
    let mut det = 1.0;
    for k in 0..n {
        let p = (k..n)
            .max_by(|&i, &j| a[i * n + k].abs().total_cmp(&a[j * n + k].abs()))
            .unwrap_or(k);
        if a[p * n + k] == 0.0 {
            return 0.0;
        }
        if p != k {
            for j in 0..n {
                a.swap(k * n + j, p * n + j);
            }
            det = -det;
        }
        let pivot = a[k * n + k];
        det *= pivot;
        for i in k + 1..n {
            let f = a[i * n + k] / pivot;
            for j in k + 1..n {
                a[i * n + j] -= f * a[k * n + j];
            }
        }
    }
    det
}

impl Det {
    fn check(&self, x: &TypeInfo) -> Result<()> {
        TypeInfo::common_dtype("det", std::slice::from_ref(x), "float", DType::is_float)?;
        if let Some(s) = &x.shape {
            let r = s.len();
            if r < 2 || (s[r - 1] >= 0 && s[r - 2] >= 0 && s[r - 1] != s[r - 2]) {
                return op_err(format!(
                    "op 'det': x must be [..., M, M], got {}",
                    x.shape_string()
                ));
            }
        }
        Ok(())
    }
}

fn det_kernel(x: &Tensor, out: &Tensor) -> Result<()> {
    let v = x.to_f64_vec()?;
    let n = x.shape()[x.ndim() - 1];
    let dets: Vec<f64> = if n == 0 {
        vec![1.0; out.size()]
    } else {
        v.chunks_exact(n * n)
            .map(|m| determinant(&mut m.to_vec(), n))
            .collect()
    };
    out.write_f64s(&dets)
}

impl Op for Det {
    fn name(&self) -> &str {
        "det"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check(x)?;
        let shape = x.shape.as_ref().map(|s| s[..s.len() - 2].to_vec());
        Ok(vec![TypeInfo::new(x.dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check(&TypeInfo::of(x))?;
        let out = ctx.output(0, x.dtype(), &x.shape()[..x.ndim() - 2])?;
        if !x.dtype().is_computable() {
            return op_err("op 'det' takes float inputs");
        }
        det_kernel(x, &out)?;
        Ok(vec![out])
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register_op(Arc::new(Det));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{run_vec, t};

    #[test]
    fn determinants_of_a_batch_with_pivoting_and_singular_matrices() {
        let x = t(
            &[3, 2, 2],
            vec![1.0f64, 2.0, 3.0, 4.0, 0.0, 1.0, 1.0, 0.0, 1.0, 2.0, 2.0, 4.0],
        );
        let (s, v) = run_vec::<f64>(&Det, &[x]).unwrap();
        assert_eq!(s, [3]);
        assert_eq!(v, [-2.0, -1.0, 0.0]);
        // 2·(3·2 − 2·1) − 0 + 1·(1·1 − 3·1) = 8 − 2.
        let mut m = vec![2.0, 0.0, 1.0, 1.0, 3.0, 2.0, 1.0, 1.0, 2.0];
        assert!((determinant(&mut m, 3) - 6.0).abs() < 1e-12);
        let e = run_vec::<f64>(&Det, &[t(&[2, 3], vec![0.0f64; 6])]).unwrap_err();
        assert!(matches!(e, crate::Error::Op(_)), "{e:?}");
    }
}
