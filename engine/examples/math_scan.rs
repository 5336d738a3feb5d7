//! Checks f32 math kernels against an f64 reference on every f32 bit
//! pattern (2^32 inputs; about 25 s per function in a release build):
//!
//! ```text
//! cargo run --release -p vigil-engine --example math_scan -- exp sigmoid tanh
//! ```
//!
//! Prints, per function, the largest distance in ULPs from the reference
//! rounded to f32, the input where it occurs, and how many inputs are more
//! than 1 ULP away. A NaN reference must give NaN. Exits 1 above 2 ULP.

use vigil_engine::ops::vmath::{MathFn, VMath};

/// The f64 reference, rounded to f32 once.
fn reference(f: MathFn, x: f32) -> f32 {
    let x = x as f64;
    let y = match f {
        MathFn::Exp => x.exp(),
        MathFn::Log => x.ln(),
        MathFn::Sqrt => x.sqrt(),
        MathFn::Tanh => x.tanh(),
        MathFn::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        MathFn::Sin => x.sin(),
        MathFn::Cos => x.cos(),
        MathFn::Tan => x.tan(),
        MathFn::Asin => x.asin(),
        MathFn::Acos => x.acos(),
        MathFn::Atan => x.atan(),
        MathFn::Sinh => x.sinh(),
        MathFn::Cosh => x.cosh(),
        MathFn::Expm1 => x.exp_m1(),
        MathFn::Log1p => x.ln_1p(),
        MathFn::Erf => libm::erf(x),
    };
    y as f32
}

/// Distance in units in the last place; +0 and -0 are 0 apart.
fn ulps(a: f32, b: f32) -> u64 {
    let ord = |x: f32| {
        let i = x.to_bits() as i32 as i64;
        if i < 0 {
            -(i & 0x7fff_ffff)
        } else {
            i
        }
    };
    (ord(a) - ord(b)).unsigned_abs()
}

fn parse(name: &str) -> Option<MathFn> {
    MathFn::ALL
        .into_iter()
        .find(|f| format!("{f:?}").eq_ignore_ascii_case(name))
}

fn main() {
    let mut bad = false;
    for name in std::env::args().skip(1) {
        let Some(f) = parse(&name) else {
            eprintln!("math_scan: unknown function '{name}'");
            std::process::exit(2);
        };
        let (mut worst, mut at, mut over1, mut nan_missed) = (0u64, 0f32, 0u64, 0u64);
        let mut src = vec![0f32; 1 << 16];
        let mut dst = vec![0f32; 1 << 16];
        for hi in 0..1u32 << 16 {
            for (lo, s) in src.iter_mut().enumerate() {
                *s = f32::from_bits(hi << 16 | lo as u32);
            }
            f32::map(f, &src, &mut dst);
            for (&x, &y) in src.iter().zip(&dst) {
                let want = reference(f, x);
                if want.is_nan() {
                    nan_missed += u64::from(!y.is_nan());
                    continue;
                }
                let d = ulps(y, want);
                over1 += u64::from(d > 1);
                if d > worst {
                    (worst, at) = (d, x);
                }
            }
        }
        println!("{f:?}: max {worst} ULP at {at:e}; {over1} inputs above 1 ULP; {nan_missed} NaN references missed");
        bad |= worst > 2 || nan_missed > 0;
    }
    std::process::exit(i32::from(bad));
}
