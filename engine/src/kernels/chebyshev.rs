//! Polynomial fits for the SIMD math kernels, computed at first use from
//! `libm`'s f64 functions (no hand-copied coefficients): interpolation at
//! the Chebyshev nodes, which is within a small factor of the best
//! polynomial of its degree, and its conversion to powers of the variable
//! for Horner's rule with FMA.

/// Chebyshev coefficients of `f` on `[a, b]`, interpolating at the
/// Chebyshev nodes of the first kind (`f ≈ Σ' c_k T_k(u)`, the first term
/// halved, `u` on [-1, 1]).
pub(crate) fn chebyshev<const N: usize>(f: impl Fn(f64) -> f64, a: f64, b: f64) -> [f64; N] {
    let n = N as f64;
    let theta = |j: usize| std::f64::consts::PI * (j as f64 + 0.5) / n;
    let fx: Vec<f64> = (0..N)
        .map(|j| f(0.5 * (b - a) * theta(j).cos() + 0.5 * (b + a)))
        .collect();
    let mut c = [0.0; N];
    for (k, ck) in c.iter_mut().enumerate() {
        let s: f64 = (0..N).map(|j| fx[j] * (k as f64 * theta(j)).cos()).sum();
        *ck = 2.0 * s / n;
    }
    c
}

/// The interpolant of `f` on `[a, b]` (see [`chebyshev`]) as coefficients
/// of powers of its argument: `f(t) ≈ Σ m_j t^j`. Exact in f64 up to
/// rounding; well conditioned for the low degrees and short intervals
/// near zero used here.
pub(crate) fn power_series<const N: usize>(f: impl Fn(f64) -> f64, a: f64, b: f64) -> [f64; N] {
    let c = chebyshev::<N>(f, a, b);
    // Powers of u: T_0 = 1, T_1 = u, T_{k+1} = 2u T_k - T_{k-1}.
    let mut in_u = [0.0; N];
    let (mut prev, mut cur) = ([0.0; N], [0.0; N]);
    prev[0] = 1.0;
    in_u[0] = 0.5 * c[0];
    if N > 1 {
        cur[1] = 1.0;
        in_u[1] = c[1];
    }
    for ck in c.iter().skip(2) {
        let mut next = [0.0; N];
        for j in 0..N {
            next[j] = if j > 0 { 2.0 * cur[j - 1] } else { 0.0 } - prev[j];
        }
        for j in 0..N {
            in_u[j] += ck * next[j];
        }
        (prev, cur) = (cur, next);
    }
    // u = α t + β: Σ m_j (α t + β)^j by Horner's rule on polynomials.
    let (alpha, beta) = (2.0 / (b - a), -(a + b) / (b - a));
    let mut out = [0.0; N];
    for &m in in_u.iter().rev() {
        // out = out · (α t + β) + m
        let mut next = [0.0; N];
        for j in 0..N {
            next[j] = beta * out[j] + if j > 0 { alpha * out[j - 1] } else { 0.0 };
        }
        next[0] += m;
        out = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cubic is its own interpolant, on any interval.
    #[test]
    fn a_cubic_comes_back_as_its_coefficients() {
        let m = power_series::<4>(|t| 1.0 - 2.0 * t + 0.5 * t * t * t, -0.5, 3.0);
        for (got, want) in m.iter().zip([1.0, -2.0, 0.0, 0.5]) {
            assert!((got - want).abs() < 1e-13, "{m:?}");
        }
    }
}
