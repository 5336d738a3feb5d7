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

use vigil_engine::compare::ulp_distance;
use vigil_engine::kernels::{MathFn, VMath};
use vigil_engine::DType;

/// The f64 kernel (the standard library's functions, libm's erf), rounded
/// to f32 once.
fn reference(f: MathFn, x: f32) -> f32 {
    <f64 as VMath>::one(f, x as f64) as f32
}

/// Distance in f32 units in the last place; +0 and -0 are 0 apart.
fn ulps(a: f32, b: f32) -> u64 {
    ulp_distance(a as f64, b as f64, DType::F32)
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
