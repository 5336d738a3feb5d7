//! The unary functions that have slice kernels ([`crate::kernels::vmath`],
//! and the faster AVX2/AVX-512 ones of [`crate::kernels::fastmath`]).

/// The unary functions with a slice kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathFn {
    Exp,
    Log,
    Sqrt,
    Tanh,
    Sigmoid,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Expm1,
    Log1p,
    Erf,
    /// `x · Φ(x) = x/2 · (1 + erf(x/√2))`, the exact (erf) GELU.
    Gelu,
    /// `x/2 · (1 + tanh(√(2/π) · (x + 0.044715·x³)))`, the tanh GELU of
    /// GPT-2 and ONNX's `Gelu(approximate = "tanh")`.
    GeluTanh,
}

impl MathFn {
    pub const ALL: [MathFn; 18] = [
        MathFn::Exp,
        MathFn::Log,
        MathFn::Sqrt,
        MathFn::Tanh,
        MathFn::Sigmoid,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Tan,
        MathFn::Asin,
        MathFn::Acos,
        MathFn::Atan,
        MathFn::Sinh,
        MathFn::Cosh,
        MathFn::Expm1,
        MathFn::Log1p,
        MathFn::Erf,
        MathFn::Gelu,
        MathFn::GeluTanh,
    ];
}
