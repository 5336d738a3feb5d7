//! Spectral ops: `dft` and `stft` (ONNX DFT and STFT) over one transform
//! per line ([`transform`]), the windows STFT takes
//! ([`window::SpectralWindow`]) and the mel filter bank
//! ([`mel::MelWeightMatrix`]).
//!
//! Signals and spectra are real (a last axis of 1) or complex (a last
//! axis of 2: real, imaginary). Transforms are computed directly in f64,
//! O(n²) per line: exact to rounding, and fast enough for the lengths
//! the ops meet in test models; a model with long transforms would want
//! an FFT.

use crate::ops::OpRegistry;

pub mod dft;
pub mod mel;
pub mod stft;
pub mod window;

/// A complex number as `(re, im)`.
pub type Complex = (f64, f64);

/// The discrete Fourier transform of `x` at `bins` frequencies,
/// `X[k] = Σⱼ x[j]·e^(∓2πi·jk/n)` for a transform length `n` (`x` is
/// zero-padded or cut to `n`); `inverse` takes `+` and divides by `n`.
pub fn transform(x: &[Complex], n: usize, bins: usize, inverse: bool) -> Vec<Complex> {
    let sign = if inverse { 1.0 } else { -1.0 };
    let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
    let m = x.len().min(n);
    (0..bins)
        .map(|k| {
            let (mut re, mut im) = (0.0, 0.0);
            for (j, &(a, b)) in x[..m].iter().enumerate() {
                // jk mod n keeps the angle small, so large products lose nothing.
                let t = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                let (s, c) = t.sin_cos();
                re += a * c - b * s;
                im += a * s + b * c;
            }
            (re * scale, im * scale)
        })
        .collect()
}

pub fn register(r: &mut OpRegistry) {
    window::register(r);
    mel::register(r);
    dft::register(r);
    stft::register(r);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transform_and_its_inverse_round_trip() {
        let x: Vec<Complex> = vec![(1.0, 0.0), (2.0, -1.0), (0.5, 3.0), (-1.0, 0.0), (0.0, 2.0)];
        let f = transform(&x, 5, 5, false);
        // Bin 0 is the sum.
        assert!((f[0].0 - 2.5).abs() < 1e-12 && (f[0].1 - 4.0).abs() < 1e-12);
        let back = transform(&f, 5, 5, true);
        for (a, b) in x.iter().zip(&back) {
            assert!((a.0 - b.0).abs() < 1e-12 && (a.1 - b.1).abs() < 1e-12, "{back:?}");
        }
        // A cosine of frequency 1 over 4 points: bins 1 and 3 hold n/2.
        let c: Vec<Complex> = (0..4)
            .map(|j| ((std::f64::consts::PI * j as f64 / 2.0).cos(), 0.0))
            .collect();
        let f = transform(&c, 4, 4, false);
        for (k, want) in [0.0, 2.0, 0.0, 2.0].iter().enumerate() {
            assert!((f[k].0 - want).abs() < 1e-12 && f[k].1.abs() < 1e-12, "{f:?}");
        }
    }
}
