//! `spectral_window(size)`: the Hann, Hamming or Blackman window of `size`
//! points (ONNX HannWindow, HammingWindow, BlackmanWindow), as STFT takes
//! them. `size` is a scalar integer input, so the length may be decided
//! at run time. Attrs: `kind` (`hann`, `hamming`, `blackman`), `periodic`
//! (default true: the window of `size + 1` points without its last, as
//! for spectral analysis; false: symmetric) and `dtype` (default f32).
//!
//! With `M = size` (periodic) or `size − 1` (symmetric), point `n` is
//! - hann: `sin²(π n / M)`
//! - hamming: `25/46 − 21/46 · cos(2π n / M)`
//! - blackman: `0.42 − 0.5 · cos(2π n / M) + 0.08 · cos(4π n / M)`
//!
//! computed in f64 and converted once to the dtype.

use std::f64::consts::PI;
use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{attr_err, op_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// Which window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowKind {
    Hann,
    Hamming,
    Blackman,
}

const KINDS: [(&str, WindowKind); 3] = [
    ("hann", WindowKind::Hann),
    ("hamming", WindowKind::Hamming),
    ("blackman", WindowKind::Blackman),
];

/// The `spectral_window` op.
#[derive(Clone, Debug, PartialEq)]
pub struct SpectralWindow {
    pub kind: WindowKind,
    pub periodic: bool,
    pub dtype: DType,
}

impl SpectralWindow {
    /// Point `n` of a window whose period is `m`.
    fn point(&self, n: f64, m: f64) -> f64 {
        let t = 2.0 * PI * n / m;
        match self.kind {
            WindowKind::Hann => (PI * n / m).sin().powi(2),
            WindowKind::Hamming => 25.0 / 46.0 - 21.0 / 46.0 * t.cos(),
            WindowKind::Blackman => 0.42 - 0.5 * t.cos() + 0.08 * (2.0 * t).cos(),
        }
    }

    fn values(&self, size: usize) -> Vec<f64> {
        let m = if self.periodic {
            size
        } else {
            size.saturating_sub(1)
        } as f64;
        (0..size).map(|n| self.point(n as f64, m)).collect()
    }

    fn check(&self, size: &TypeInfo) -> Result<()> {
        if size.dtype.is_float() || size.dtype == DType::Bool || size.rank().is_some_and(|r| r != 0) {
            return op_err(format!(
                "op 'spectral_window': size must be an integer scalar, got {} {}",
                size.dtype,
                size.shape_string()
            ));
        }
        Ok(())
    }
}

impl Op for SpectralWindow {
    fn name(&self) -> &str {
        "spectral_window"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check(&inputs[0])?;
        let len = match inputs[0].value.as_deref() {
            Some(&[n]) if n >= 0 => n,
            _ => -1,
        };
        Ok(vec![TypeInfo::new(self.dtype, Some(vec![len]))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        self.check(&TypeInfo::of(&inputs[0]))?;
        let size = inputs[0].to_f64_vec()?[0];
        if size < 0.0 {
            return op_err(format!(
                "op 'spectral_window': size must not be negative, got {size}"
            ));
        }
        let v = self.values(size as usize);
        let out = ctx.output(0, self.dtype, &[v.len()])?;
        out.write_f64s(&v)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let kind = KINDS
            .iter()
            .find(|(_, k)| *k == self.kind)
            .map_or("?", |(n, _)| n);
        Attrs::new()
            .with("kind", kind)
            .with("periodic", self.periodic)
            .with("dtype", self.dtype.name())
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("spectral_window", |a: &Attrs| {
        a.only("spectral_window", &["kind", "periodic", "dtype"])?;
        let name = a.0.get("kind").and_then(|v| v.as_str()).unwrap_or_default();
        let Some(&(_, kind)) = KINDS.iter().find(|(n, _)| *n == name) else {
            return attr_err(format!(
                "op 'spectral_window': attr 'kind' must be hann, hamming or blackman, got '{name}'"
            ));
        };
        Ok(Arc::new(SpectralWindow {
            kind,
            periodic: a.bool("periodic")?.unwrap_or(true),
            dtype: a.dtype("dtype")?.unwrap_or(DType::F32),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec};

    fn window(kind: &str, periodic: bool, size: i64) -> Vec<f64> {
        let o = op(
            "spectral_window",
            Attrs::new()
                .with("kind", kind)
                .with("periodic", periodic)
                .with("dtype", "f64"),
        );
        let (s, v) = run_vec::<f64>(&*o, &[Tensor::from_vec(&[], vec![size]).unwrap()]).unwrap();
        assert_eq!(s, [v.len()]);
        v
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn symmetric_windows_end_where_they_start_and_peak_in_the_middle() {
        close(&window("hann", false, 5), &[0.0, 0.5, 1.0, 0.5, 0.0]);
        close(&window("hamming", false, 3), &[4.0 / 46.0, 1.0, 4.0 / 46.0]);
        close(&window("blackman", false, 3), &[0.0, 1.0, 0.0]);
    }

    #[test]
    fn a_periodic_window_is_the_symmetric_one_a_point_longer_without_its_last() {
        for kind in ["hann", "hamming", "blackman"] {
            let p = window(kind, true, 8);
            let s = window(kind, false, 9);
            close(&p, &s[..8]);
        }
        assert!(window("hann", true, 0).is_empty());
    }

    #[test]
    fn size_must_be_an_integer_scalar() {
        let o = op("spectral_window", Attrs::new().with("kind", "hann"));
        let e = run_vec::<f32>(&*o, &[Tensor::from_vec(&[], vec![4.0f32]).unwrap()]).unwrap_err();
        assert!(matches!(e, crate::Error::Op(_)), "{e:?}");
        assert!(OpRegistry::builtin()
            .make("spectral_window", &Attrs::new().with("kind", "kaiser"))
            .is_err());
    }
}
