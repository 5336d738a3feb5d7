//! Writes the `inplace` suite: graphs built pure in which the in-place pass
//! rewrites many nodes (long elementwise chains, residual blocks, optimizer
//! updates on mutable inputs and on parameters, fan-out of a shared
//! intermediate, chains of set/inc_subtensor, chains through views), plus
//! legal explicitly in-place graphs and graphs where the pass must refuse.
//!
//! ```text
//! cargo run --example gen_inplace_suite -- suites/inplace
//! ```
//!
//! Every case must give the same outputs with and without the pass
//! (`vigil exec CASE --no-inplace`). The expected outputs come from the
//! numpy-semantics reference in `vigil_testkit::suites::ops` (each variable is a value:
//! a legal graph cannot observe a destroyed buffer), not from the engine.
//! Running the generator twice gives identical files.

use std::path::PathBuf;

use vigil_testkit::suites::ops::{at1, gen, ints, s, write_suite, At, Case, Dt, Ix, Rng, A, HI, J, LO};

/// A 0-d constant named after its value, made once per case.
fn k(c: &mut Case, dt: Dt, v: f64) -> String {
    let name = format!(
        "k_{}_{}",
        dt.name(),
        v.to_string().replace('-', "m").replace('.', "_")
    );
    if !c.has(&name) {
        c.konst(&name, &A::scalar(dt, v));
    }
    name
}

/// One elementwise step of a chain: an op and, for binary ops, a 0-d
/// constant operand.
type Step = (&'static str, Option<f64>);

/// Float steps that keep values bounded and inside every op's domain
/// (`sqrt` and `log` see positive values, `pow` a positive base), for any
/// start value in about [-4, 4] and for any start position in the cycle
/// after the first full pass.
const FLOAT_STEPS: [Step; 17] = [
    ("mul", Some(0.75)),
    ("add", Some(0.5)),
    ("tanh", None),
    ("mul", Some(1.5)),
    ("neg", None),
    ("abs", None),
    ("add", Some(0.5)),
    ("sqrt", None),
    ("log", None),
    ("sub", Some(0.25)),
    ("relu", None),
    ("sigmoid", None),
    ("exp", None),
    ("maximum", Some(1.75)),
    ("div", Some(1.25)),
    ("minimum", Some(1.5)),
    ("pow", Some(2.0)),
];

/// Integer steps; `mul` wraps on purpose.
const INT_STEPS: [Step; 9] = [
    ("mul", Some(1000003.0)),
    ("add", Some(7.0)),
    ("neg", None),
    ("maximum", Some(-100000.0)),
    ("sub", Some(12345.0)),
    ("abs", None),
    ("mul", Some(65537.0)),
    ("minimum", Some(2000000000.0)),
    ("relu", None),
];

/// Applies `steps[(start + i) % len]` for `i in 0..n` to `t`; returns the
/// last variable.
fn chain(c: &mut Case, t: &str, dt: Dt, n: usize, start: usize, steps: &[Step]) -> String {
    let mut t = t.to_string();
    for i in 0..n {
        let (op, kv) = steps[(start + i) % steps.len()];
        t = match kv {
            Some(v) => {
                let kn = k(c, dt, v);
                c.op(op, &[&t, &kn], vec![])
            }
            None => c.op(op, &[&t], vec![]),
        };
    }
    t
}

fn floats(dt: Dt, shape: &[usize], seed: &str, lo: f64, hi: f64) -> A {
    let mut rng = Rng::new(seed);
    gen(dt, shape, || rng.step(lo, hi, 0.125))
}

fn chains(v: &mut Vec<Case>) {
    {
        let mut c = Case::new(
            "chain32_f32_protected_input",
            "32 elementwise ops (mul add tanh neg abs sqrt log sub relu sigmoid exp maximum div minimum pow, 0-d constants) from a protected f32 [4, 8] input: all but the first can run in place",
        );
        c.input("x", &floats(Dt::F32, &[4, 8], &c.name.clone(), -3.0, 3.0));
        let y = chain(&mut c, "x", Dt::F32, 32, 0, &FLOAT_STEPS);
        c.op_as("y", "copy", &[&y], vec![]);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "chain32_f64_mutable_input",
            "the same 32-op chain on a mutable f64 [5, 6] input: every op can run in place, the first one destroys the input",
        );
        c.input_mut("x", &floats(Dt::F64, &[5, 6], &c.name.clone(), -3.0, 3.0));
        let y = chain(&mut c, "x", Dt::F64, 32, 0, &FLOAT_STEPS);
        c.out(&y);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "chain128_f64",
            "128 elementwise ops on f64 [3, 7], started mid-cycle, from a protected input",
        );
        c.input("x", &floats(Dt::F64, &[3, 7], &c.name.clone(), -2.0, 2.0));
        let y = chain(&mut c, "x", Dt::F64, 128, 5, &FLOAT_STEPS);
        c.out(&y);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "chain36_i32_wrapping",
            "36 integer ops on i32 [4, 5] (mul wraps on purpose): every op but the first in place",
        );
        let mut rng = Rng::new(&c.name);
        c.input("x", &gen(Dt::I32, &[4, 5], || rng.int(-50000, 50000) as f64));
        let y = chain(&mut c, "x", Dt::I32, 36, 0, &INT_STEPS);
        c.out(&y);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "chain64_f32_through_views",
            "64 steps on a square f32 [6, 6] where every 8th step is a view op (transpose, reshape [36] of a transposed value (a copy), reshape back, expand_dims, squeeze, reshape [4, 9]): the in-place ops write through views of the intermediate",
        );
        c.input("x", &floats(Dt::F32, &[6, 6], &c.name.clone(), -2.0, 2.0));
        let views: [(&str, At); 8] = [
            ("transpose", vec![]),
            ("reshape", at1("shape", ints(&[36]))),
            ("reshape", at1("shape", ints(&[6, 6]))),
            ("expand_dims", at1("axis", J::Int(0))),
            ("squeeze", vec![]),
            ("transpose", vec![]),
            ("reshape", at1("shape", ints(&[4, 9]))),
            ("reshape", at1("shape", ints(&[6, -1]))),
        ];
        let mut t = "x".to_string();
        let mut step = 0;
        for i in 0..64 {
            if i % 8 == 7 {
                let (op, at) = views[i / 8].clone();
                t = c.op(op, &[&t], at);
            } else {
                t = chain(&mut c, &t, Dt::F32, 1, step, &FLOAT_STEPS);
                step += 1;
            }
        }
        c.out(&t);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "chain_f64_cast_and_reshape_breaks",
            "f64 chain, cast to f32 (no in-place twin), f32 chain, reshape [12] (a view) and back [3, 4], cast to i64, integer chain",
        );
        c.input("x", &floats(Dt::F64, &[3, 4], &c.name.clone(), -3.0, 3.0));
        let a = chain(&mut c, "x", Dt::F64, 10, 0, &FLOAT_STEPS);
        let b = c.op("cast", &[&a], at1("dtype", s("f32")));
        let b = chain(&mut c, &b, Dt::F32, 10, 3, &FLOAT_STEPS);
        let r = c.op("reshape", &[&b], at1("shape", ints(&[12])));
        let r = chain(&mut c, &r, Dt::F32, 4, 0, &FLOAT_STEPS);
        let r = c.op("reshape", &[&r], at1("shape", ints(&[3, 4])));
        let m = k(&mut c, Dt::F32, 1000.0);
        let r = c.op("mul", &[&r, &m], vec![]);
        let i = c.op("cast", &[&r], at1("dtype", s("i64")));
        let y = chain(&mut c, &i, Dt::I64, 9, 0, &INT_STEPS);
        c.op_as("y", "copy", &[&y], vec![]);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "chain40_f64_nodes_shuffled",
            "a 40-op f64 chain with a fan-out every 10 ops, its nodes listed in a scrambled order (the format allows any order): same rewrites and results",
        );
        c.input("x", &floats(Dt::F64, &[3, 5], &c.name.clone(), -3.0, 3.0));
        let mut t = "x".to_string();
        let mut side = Vec::new();
        for b in 0..4 {
            t = chain(&mut c, &t, Dt::F64, 10, 3 * b, &FLOAT_STEPS);
            side.push(c.op("tanh", &[&t], vec![]));
        }
        let mut acc = t;
        for sd in &side {
            acc = c.op("add", &[&acc, sd], vec![]);
        }
        c.out(&acc);
        let mut rng = Rng::new(&c.name);
        c.shuffle_nodes(&mut rng);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "chain24_f32_dynamic_rows",
            "a 24-op chain on x declared [-1, 4] (fed [3, 4]) with 0-d constants (in place), then add with y declared [-1, 4] (the pass must refuse: the output may outgrow either operand)",
        );
        c.input_dyn("x", &floats(Dt::F32, &[3, 4], "x", -3.0, 3.0), &[-1, 4], false);
        c.input_dyn("y", &floats(Dt::F32, &[3, 4], "y", -3.0, 3.0), &[-1, 4], false);
        let t = chain(&mut c, "x", Dt::F32, 24, 0, &FLOAT_STEPS);
        let u = c.op("add", &[&t, "y"], vec![]);
        let u = chain(&mut c, &u, Dt::F32, 4, 0, &FLOAT_STEPS);
        c.out(&u);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "chain_f32_vector_operands_and_growth",
            "chain on t [3, 1] with [3, 4] operands (the output outgrows t: add may only destroy the other operand), then in place on [3, 4]",
        );
        c.input("x", &floats(Dt::F32, &[3, 1], &c.name.clone(), -2.0, 2.0));
        c.input("w", &floats(Dt::F32, &[3, 4], "w", -2.0, 2.0));
        c.input("r", &floats(Dt::F32, &[4], "r", 0.5, 2.0));
        let t = c.op("tanh", &["x"], vec![]);
        let w2 = c.op("abs", &["w"], vec![]);
        let g = c.op("add", &[&t, &w2], vec![]);
        let g = c.op("mul", &[&g, "r"], vec![]);
        let g = c.op("sub", &[&t, &g], vec![]);
        let g = chain(&mut c, &g, Dt::F32, 8, 0, &FLOAT_STEPS);
        c.out(&g);
        v.push(c);
    }
}

/// `y + relu(y @ w_k)` blocks, and residuals with views inside.
fn residuals(v: &mut Vec<Case>) {
    {
        let mut c = Case::new(
            "residual_mlp_f32_4_blocks",
            "y = y + relu(y @ W_k + b_k) four times on f32 [4, 6] (W_k [6, 6] inputs): relu, the bias add and the residual add run in place",
        );
        c.input("x", &floats(Dt::F32, &[4, 6], "x", -1.0, 1.0));
        let mut y = "x".to_string();
        for b in 0..4 {
            let w = format!("w{b}");
            let bias = format!("b{b}");
            c.input(&w, &floats(Dt::F32, &[6, 6], &w, -0.5, 0.5));
            c.input(&bias, &floats(Dt::F32, &[6], &bias, -0.25, 0.25));
            let h = c.op("matmul", &[&y, &w], vec![]);
            let h = c.op("add", &[&h, &bias], vec![]);
            let h = c.op("relu", &[&h], vec![]);
            y = c.op("add", &[&y, &h], vec![]);
        }
        c.out(&y);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "residual_transpose_f64_6_blocks",
            "y = y + tanh(transpose(y) * s_k) six times on f64 [5, 5]: mul cannot destroy the transposed view of y (y is read later), tanh and the residual add can",
        );
        c.input("x", &floats(Dt::F64, &[5, 5], "x", -2.0, 2.0));
        let mut y = "x".to_string();
        for b in 0..6 {
            let sc = k(&mut c, Dt::F64, 0.5 + 0.125 * b as f64);
            let yt = c.op("transpose", &[&y], vec![]);
            let h = c.op("mul", &[&yt, &sc], vec![]);
            let h = c.op("tanh", &[&h], vec![]);
            y = c.op("add", &[&y, &h], vec![]);
        }
        c.out(&y);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "residual_view_inside_f32",
            "y = y + sigmoid(y[::-1, ::-1] - m) * g four times on f32 [4, 4]; create_view outputs have no static shape, so the pass refuses the rewrites after them ('shape unknown before running'): a correctness check with create_view inside",
        );
        c.input("x", &floats(Dt::F32, &[4, 4], "x", -2.0, 2.0));
        c.input("g", &floats(Dt::F32, &[4], "g", -1.0, 1.0));
        let m = k(&mut c, Dt::F32, 0.25);
        let mut y = "x".to_string();
        for b in 0..4 {
            let o = format!("rev{b}");
            let r = c.view_as(&o, &y, &[Ix::R(-1, LO, -1), Ix::R(-1, LO, -1)]);
            let h = c.op("sub", &[&r, &m], vec![]);
            let h = c.op("sigmoid", &[&h], vec![]);
            let h = c.op("mul", &[&h, "g"], vec![]);
            y = c.op("add", &[&y, &h], vec![]);
        }
        c.out(&y);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "residual_reshape_views_f32_4_blocks",
            "y = y + reshape(tanh(reshape(y, [2, 8]) * a + b), [4, 4]) four times on f32 [4, 4] (reshape views inside the block; b [8])",
        );
        c.input("x", &floats(Dt::F32, &[4, 4], "x", -2.0, 2.0));
        c.input("b", &floats(Dt::F32, &[8], "b", -0.5, 0.5));
        let a = k(&mut c, Dt::F32, 0.75);
        let mut y = "x".to_string();
        for _ in 0..4 {
            let r = c.op("reshape", &[&y], at1("shape", ints(&[2, 8])));
            let h = c.op("mul", &[&r, &a], vec![]);
            let h = c.op("add", &[&h, "b"], vec![]);
            let h = c.op("tanh", &[&h], vec![]);
            let h = c.op("reshape", &[&h], at1("shape", ints(&[4, 4])));
            y = c.op("add", &[&y, &h], vec![]);
        }
        c.out(&y);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "residual_norm_like_f64",
            "y = y + (y - mean(y, -1, keepdims)) * gamma three times on f64 [3, 8]: y fans out to mean, sub and the residual add",
        );
        c.input("x", &floats(Dt::F64, &[3, 8], "x", -2.0, 2.0));
        c.input("gamma", &floats(Dt::F64, &[8], "gamma", -0.5, 0.5));
        let mut y = "x".to_string();
        for _ in 0..3 {
            let m = c.op(
                "mean",
                &[&y],
                vec![("axes", ints(&[-1])), ("keepdims", J::Bool(true))],
            );
            let d = c.op("sub", &[&y, &m], vec![]);
            let h = c.op("mul", &[&d, "gamma"], vec![]);
            y = c.op("add", &[&y, &h], vec![]);
        }
        let sm = c.op("softmax", &[&y], vec![]);
        c.out(&y).out(&sm);
        v.push(c);
    }
}

fn optimizers(v: &mut Vec<Case>) {
    {
        let mut c = Case::new(
            "sgd_f32_mutable_weights_3_steps",
            "w = w - lr * g_k for three gradient inputs, w a mutable f32 [4, 3] input: each update runs in place on w",
        );
        c.input_mut("w", &floats(Dt::F32, &[4, 3], "w", -1.0, 1.0));
        let lr = k(&mut c, Dt::F32, 0.125);
        let mut w = "w".to_string();
        for s in 0..3 {
            let g = format!("g{s}");
            c.input(&g, &floats(Dt::F32, &[4, 3], &g, -2.0, 2.0));
            let u = c.op("mul", &[&g, &lr], vec![]);
            w = c.op("sub", &[&w, &u], vec![]);
        }
        c.out(&w);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "sgd_f64_parameter_weights",
            "the same SGD steps with w an inline f64 parameter (state the pass may update)",
        );
        c.param("w", &floats(Dt::F64, &[3, 3], "w", -1.0, 1.0));
        let lr = k(&mut c, Dt::F64, 0.1);
        let mut w = "w".to_string();
        for s in 0..3 {
            let g = format!("g{s}");
            c.input(&g, &floats(Dt::F64, &[3, 3], &g, -2.0, 2.0));
            let u = c.op("mul", &[&g, &lr], vec![]);
            w = c.op("sub", &[&w, &u], vec![]);
        }
        c.out(&w);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "sgd_linear_regression_f64_4_steps",
            "four gradient steps of least squares: pred = X @ w, grad = X.T @ (pred - y) * 2/N, w -= lr * grad (w a parameter), then mse",
        );
        c.input("X", &floats(Dt::F64, &[8, 3], "X", -1.0, 1.0));
        c.input("y", &floats(Dt::F64, &[8, 1], "y", -1.0, 1.0));
        c.param("w", &floats(Dt::F64, &[3, 1], "w", -0.5, 0.5));
        let two_n = k(&mut c, Dt::F64, 0.25);
        let lr = k(&mut c, Dt::F64, 0.3);
        let xt = c.op("transpose", &["X"], vec![]);
        let mut w = "w".to_string();
        for _ in 0..4 {
            let pred = c.op("matmul", &["X", &w], vec![]);
            let err = c.op("sub", &[&pred, "y"], vec![]);
            let g = c.op("matmul", &[&xt, &err], vec![]);
            let g = c.op("mul", &[&g, &two_n], vec![]);
            let g = c.op("mul", &[&g, &lr], vec![]);
            w = c.op("sub", &[&w, &g], vec![]);
        }
        let pred = c.op("matmul", &["X", &w], vec![]);
        let loss = c.op("mse", &[&pred, "y"], vec![]);
        c.out(&w).out(&loss);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "momentum_f32_3_steps",
            "v = mu * v + g; w = w - lr * v for three steps, v and w mutable f32 [2, 5] inputs: v fans out to the w update and the next step",
        );
        c.input_mut("v", &floats(Dt::F32, &[2, 5], "v", -0.5, 0.5));
        c.input_mut("w", &floats(Dt::F32, &[2, 5], "w", -1.0, 1.0));
        let mu = k(&mut c, Dt::F32, 0.875);
        let lr = k(&mut c, Dt::F32, 0.25);
        let (mut vv, mut w) = ("v".to_string(), "w".to_string());
        for s in 0..3 {
            let g = format!("g{s}");
            c.input(&g, &floats(Dt::F32, &[2, 5], &g, -2.0, 2.0));
            let m = c.op("mul", &[&vv, &mu], vec![]);
            vv = c.op("add", &[&m, &g], vec![]);
            let u = c.op("mul", &[&vv, &lr], vec![]);
            w = c.op("sub", &[&w, &u], vec![]);
        }
        c.out(&vv).out(&w);
        v.push(c);
    }
    for (dt, steps, state) in [(Dt::F64, 3, "mutable inputs"), (Dt::F32, 2, "parameters")] {
        let d = dt.name();
        let mut c = Case::new(
            format!("adam_{d}_{steps}_steps_{}", state.replace(' ', "_")),
            format!(
                "Adam-like updates on {d} [3, 4] with m, v, w as {state}: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g g; w -= lr (m c1_t) / (sqrt(v c2_t) + eps)"
            ),
        );
        let (m0, v0, w0) = (
            floats(dt, &[3, 4], "m", -0.25, 0.25),
            floats(dt, &[3, 4], "v", 0.0, 0.5),
            floats(dt, &[3, 4], "w", -1.0, 1.0),
        );
        if dt == Dt::F64 {
            c.input_mut("m", &m0);
            c.input_mut("v", &v0);
            c.input_mut("w", &w0);
        } else {
            c.param("m", &m0);
            c.param("v", &v0);
            c.param("w", &w0);
        }
        let b1 = k(&mut c, dt, 0.875);
        let nb1 = k(&mut c, dt, 0.125);
        let b2 = k(&mut c, dt, 0.9921875);
        let nb2 = k(&mut c, dt, 0.0078125);
        let lr = k(&mut c, dt, 0.0625);
        let eps = k(&mut c, dt, 0.001953125);
        let (mut m, mut vv, mut w) = ("m".to_string(), "v".to_string(), "w".to_string());
        for t in 1..=steps {
            let g = format!("g{t}");
            c.input(&g, &floats(dt, &[3, 4], &g, -2.0, 2.0));
            let c1 = k(
                &mut c,
                dt,
                (1.0 / (1.0 - 0.875f64.powi(t)) * 1024.0).round() / 1024.0,
            );
            let c2 = k(
                &mut c,
                dt,
                (1.0 / (1.0 - 0.9921875f64.powi(t)) * 1024.0).round() / 1024.0,
            );
            let a = c.op("mul", &[&m, &b1], vec![]);
            let bg = c.op("mul", &[&g, &nb1], vec![]);
            m = c.op("add", &[&a, &bg], vec![]);
            let a = c.op("mul", &[&vv, &b2], vec![]);
            let g2 = c.op("mul", &[&g, &g], vec![]);
            let bg = c.op("mul", &[&g2, &nb2], vec![]);
            vv = c.op("add", &[&a, &bg], vec![]);
            let mh = c.op("mul", &[&m, &c1], vec![]);
            let vh = c.op("mul", &[&vv, &c2], vec![]);
            let den = c.op("sqrt", &[&vh], vec![]);
            let den = c.op("add", &[&den, &eps], vec![]);
            let step = c.op("div", &[&mh, &den], vec![]);
            let step = c.op("mul", &[&step, &lr], vec![]);
            w = c.op("sub", &[&w, &step], vec![]);
        }
        c.out(&m).out(&vv).out(&w);
        v.push(c);
    }
}

fn fanouts(v: &mut Vec<Case>) {
    {
        let mut c = Case::new(
            "fanout_f32_shared_intermediate",
            "t = exp(x) read by neg, mul, sqrt and add: at most one reader destroys t, and only after the others ran",
        );
        c.input("x", &floats(Dt::F32, &[3, 5], "x", -2.0, 2.0));
        let two = k(&mut c, Dt::F32, 2.0);
        let t = c.op("exp", &["x"], vec![]);
        let a = c.op("neg", &[&t], vec![]);
        let b = c.op("mul", &[&t, &two], vec![]);
        let d = c.op("sqrt", &[&t], vec![]);
        let e = c.op("add", &[&a, &b], vec![]);
        let f = c.op("add", &[&e, &d], vec![]);
        let g = c.op("add", &[&f, &t], vec![]);
        c.out(&g);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "fanout_f64_views_of_intermediate",
            "t = tanh(x) read through transpose(t), t[::-1] and directly: the destroyer of t must run after every reader of every view",
        );
        c.input("x", &floats(Dt::F64, &[4, 4], "x", -2.0, 2.0));
        let t = c.op("tanh", &["x"], vec![]);
        let tt = c.op("transpose", &[&t], vec![]);
        let tr = c.view_as("trev", &t, &[Ix::R(-1, LO, -1)]);
        let a = c.op("neg", &[&t], vec![]);
        let b = c.op("mul", &[&tt, &tr], vec![]);
        let d = c.op("relu", &[&tr], vec![]);
        let e = c.op("add", &[&a, &b], vec![]);
        let f = c.op("sub", &[&e, &d], vec![]);
        c.out(&f);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "fanout_i64_outputs_protect_intermediates",
            "t = mul(x, 3) and transpose(u) are graph outputs: nothing may destroy t or u; the rest of the chain runs in place",
        );
        let mut rng = Rng::new(&c.name);
        c.input("x", &gen(Dt::I64, &[3, 4], || rng.int(-100, 100) as f64));
        let three = k(&mut c, Dt::I64, 3.0);
        let seven = k(&mut c, Dt::I64, 7.0);
        c.op_as("t", "mul", &["x", &three], vec![]);
        let a = c.op("neg", &["t"], vec![]);
        c.op_as("u", "add", &[&a, &seven], vec![]);
        c.op_as("ut", "transpose", &["u"], vec![]);
        let b = c.op("abs", &["u"], vec![]);
        let d = c.op("sub", &[&b, "t"], vec![]);
        let d = c.op("relu", &[&d], vec![]);
        c.out("t").out("ut").out(&d);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "fanout_diamonds_f32_8",
            "t = add(sigmoid(t) * a, tanh(t)) eight times: t fans out to two branches, one of which may destroy it",
        );
        c.input("x", &floats(Dt::F32, &[2, 6], "x", -2.0, 2.0));
        let a = k(&mut c, Dt::F32, 1.5);
        let mut t = "x".to_string();
        for _ in 0..8 {
            let p = c.op("sigmoid", &[&t], vec![]);
            let p = c.op("mul", &[&p, &a], vec![]);
            let q = c.op("tanh", &[&t], vec![]);
            t = c.op("add", &[&p, &q], vec![]);
        }
        c.out(&t);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "fanout_mutable_input_read_twice",
            "a mutable f64 input x read by relu(x), x * 2 and x[1:] + 1: only one reader may destroy x, after the others",
        );
        c.input_mut("x", &floats(Dt::F64, &[4, 3], "x", -2.0, 2.0));
        let two = k(&mut c, Dt::F64, 2.0);
        let one = k(&mut c, Dt::F64, 1.0);
        let r = c.op("relu", &["x"], vec![]);
        let m = c.op("mul", &["x", &two], vec![]);
        let xv = c.view_as("xv", "x", &[Ix::R(1, HI, 1)]);
        let p = c.op("add", &[&xv, &one], vec![]);
        let s1 = c.op("add", &[&r, &m], vec![]);
        c.out(&s1).out(&p);
        v.push(c);
    }
}

fn subtensors(v: &mut Vec<Case>) {
    {
        let mut c = Case::new(
            "subtensor_chain_f32_8_writes",
            "t = x * 2, then 8 alternating set/inc_subtensor on t (rows, strided columns, reversed rows, points, all): each runs in place on the previous result",
        );
        c.input("x", &floats(Dt::F32, &[4, 6], "x", -2.0, 2.0));
        let two = k(&mut c, Dt::F32, 2.0);
        let mut t = c.op("mul", &["x", &two], vec![]);
        let writes: [(&str, Vec<usize>, Vec<Ix>); 8] = [
            ("set_subtensor", vec![6], vec![Ix::P(0)]),
            ("inc_subtensor", vec![4, 1], vec![Ix::All, Ix::R(1, HI, 2)]),
            ("set_subtensor", vec![], vec![Ix::R(-1, LO, -2), Ix::P(-1)]),
            ("inc_subtensor", vec![6], vec![Ix::R(1, 3, 1)]),
            ("set_subtensor", vec![2, 2], vec![Ix::R(0, 4, 2), Ix::R(2, 4, 1)]),
            ("inc_subtensor", vec![], vec![]),
            ("set_subtensor", vec![3], vec![Ix::P(2), Ix::R(-1, LO, -2)]),
            ("inc_subtensor", vec![4, 6], vec![Ix::R(-1, LO, -1)]),
        ];
        for (i, (op, vs, ix)) in writes.into_iter().enumerate() {
            let val = format!("val{i}");
            c.input(&val, &floats(Dt::F32, &vs, &val, -3.0, 3.0));
            let out = format!("w{i}");
            t = c.subtensor_as(&out, op, &t, &val, &ix);
        }
        c.out(&t);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "subtensor_chain_i64_mutable_input",
            "inc_subtensor row by row on a mutable i64 [4, 3] input, then set_subtensor of a column: all in place on x",
        );
        let mut rng = Rng::new(&c.name);
        c.input_mut("x", &gen(Dt::I64, &[4, 3], || rng.int(-20, 20) as f64));
        c.input("d", &gen(Dt::I64, &[3], || rng.int(-5, 5) as f64));
        c.input("col", &gen(Dt::I64, &[4], || rng.int(-5, 5) as f64));
        let mut t = "x".to_string();
        for r in 0..4 {
            let out = format!("row{r}");
            t = c.subtensor_as(&out, "inc_subtensor", &t, "d", &[Ix::P(r)]);
        }
        t = c.subtensor_as("y", "set_subtensor", &t, "col", &[Ix::All, Ix::P(1)]);
        c.out(&t);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "subtensor_value_is_view_of_target_f64",
            "t[1:] = t[:-1] and t[0] += t[-1] with the value a view of t itself: the pass must keep these pure (reads_destroyed); later writes run in place",
        );
        c.input("x", &floats(Dt::F64, &[5, 3], "x", -2.0, 2.0));
        let t = c.op("exp", &["x"], vec![]);
        let head = c.view_as("head", &t, &[Ix::R(LO, -1, 1)]);
        let u = c.subtensor_as("u", "set_subtensor", &t, &head, &[Ix::R(1, HI, 1)]);
        let last = c.view_as("last", &u, &[Ix::P(-1)]);
        let w = c.subtensor_as("w", "inc_subtensor", &u, &last, &[Ix::P(0)]);
        c.input("z", &floats(Dt::F64, &[3], "z", -1.0, 1.0));
        let y = c.subtensor_as("y", "inc_subtensor", &w, "z", &[Ix::P(2)]);
        c.out(&y);
        v.push(c);
    }
}

fn explicit(v: &mut Vec<Case>) {
    {
        let mut c = Case::new(
            "explicit_relu_neg_inplace_mutable",
            "neg_inplace(relu_inplace(x)) on a mutable f32 input: legal, each node destroys a different variable",
        );
        c.input_mut("x", &floats(Dt::F32, &[3, 4], "x", -2.0, 2.0));
        let a = c.op("relu_inplace", &["x"], vec![]);
        let b = c.op("neg_inplace", &[&a], vec![]);
        c.out(&b);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "explicit_inplace_through_view_of_mutable",
            "add_inplace(x[1:, ::-1], y), then mul_inplace and exp_inplace on the result (a view of the mutable f64 input)",
        );
        c.input_mut("x", &floats(Dt::F64, &[4, 5], "x", -2.0, 2.0));
        c.input("y", &floats(Dt::F64, &[5], "y", -1.0, 1.0));
        let half = k(&mut c, Dt::F64, 0.5);
        let xv = c.view_as("xv", "x", &[Ix::R(1, HI, 1), Ix::R(-1, LO, -1)]);
        let a = c.op("add_inplace", &[&xv, "y"], vec![]);
        let b = c.op("mul_inplace", &[&a, &half], vec![]);
        let d = c.op("exp_inplace", &[&b], vec![]);
        c.out(&d);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "explicit_mixed_with_pure_i32",
            "explicit abs_inplace / sub_inplace / inc_subtensor_inplace on intermediates between pure ops the pass also rewrites",
        );
        let mut rng = Rng::new(&c.name);
        c.input("x", &gen(Dt::I32, &[3, 4], || rng.int(-30, 30) as f64));
        c.input("y", &gen(Dt::I32, &[4], || rng.int(-30, 30) as f64));
        let t = c.op("mul", &["x", "y"], vec![]);
        let t = c.op("abs_inplace", &[&t], vec![]);
        let t = c.op("add", &[&t, "y"], vec![]);
        let t = c.op("sub_inplace", &[&t, "x"], vec![]);
        let t = c.subtensor_as("w", "inc_subtensor_inplace", &t, "y", &[Ix::P(1)]);
        let t = c.op("neg", &[&t], vec![]);
        let t = c.op("relu", &[&t], vec![]);
        c.out(&t);
        v.push(c);
    }
}

/// Graphs where the pass must refuse a rewrite that looks possible.
fn refusals(v: &mut Vec<Case>) {
    // broadcast_to gives zero strides: the result cannot be written, so no
    // in-place op may destroy it or a view of it.
    {
        let mut c = Case::new(
            "broadcast_view_not_destroyed",
            "t = exp(x [4]); b = broadcast_to(t, [3, 4]); sub(b, c): b has zero strides and cannot be written, so the pass must not destroy it",
        );
        c.input("x", &floats(Dt::F64, &[4], "x", -2.0, 2.0));
        c.input("c", &floats(Dt::F64, &[3, 4], "c", -2.0, 2.0));
        let t = c.op("exp", &["x"], vec![]);
        let b = c.op("broadcast_to", &[&t], at1("shape", ints(&[3, 4])));
        let y = c.op("sub", &[&b, "c"], vec![]);
        c.out(&y);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "broadcast_view_not_destroyed_add",
            "t = exp(x [4]); add(c, broadcast_to(t, [3, 4])) with c a protected input: add's commutative variant must not destroy the broadcast view",
        );
        c.input("x", &floats(Dt::F64, &[4], "x", -2.0, 2.0));
        c.input("c", &floats(Dt::F64, &[3, 4], "c", -2.0, 2.0));
        let t = c.op("exp", &["x"], vec![]);
        let b = c.op("broadcast_to", &[&t], at1("shape", ints(&[3, 4])));
        let y = c.op("add", &["c", &b], vec![]);
        c.out(&y);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "broadcast_view_not_destroyed_unary",
            "t = tanh(x [1, 4]); neg(transpose(broadcast_to(t, [3, 4]))): a view of a broadcast view has zero strides too; neg must not run in place on it",
        );
        c.input("x", &floats(Dt::F32, &[1, 4], "x", -2.0, 2.0));
        let t = c.op("tanh", &["x"], vec![]);
        let b = c.op("broadcast_to", &[&t], at1("shape", ints(&[3, 4])));
        let bt = c.op("transpose", &[&b], vec![]);
        let y = c.op("neg", &[&bt], vec![]);
        c.out(&y);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "self_alias_operands_f64",
            "a = add(t, t), b = mul(a, transpose(a)), sub(b[::-1], b): only the first may run in place (x += x); the others read a view of what they would destroy",
        );
        c.input("x", &floats(Dt::F64, &[3, 3], "x", -2.0, 2.0));
        let t = c.op("exp", &["x"], vec![]);
        let a = c.op("add", &[&t, &t], vec![]);
        let at = c.op("transpose", &[&a], vec![]);
        let b = c.op("mul", &[&a, &at], vec![]);
        let br = c.view_as("brev", &b, &[Ix::R(-1, LO, -1)]);
        let d = c.op("sub", &[&br, &b], vec![]);
        c.out(&d);
        v.push(c);
    }
    {
        let mut c = Case::new(
            "dropout_p0_and_reductions_in_chain",
            "an f32 chain interrupted by dropout(p = 0) (no in-place twin), softmax, log_softmax and a keepdims sum, then more in-place steps",
        );
        c.input("x", &floats(Dt::F32, &[3, 6], "x", -2.0, 2.0));
        let t = chain(
            &mut c,
            "x",
            Dt::F32,
            6,
            0,
            &[("mul", Some(0.5)), ("add", Some(0.25)), ("tanh", None)],
        );
        // dropout is a random op (no reference value); with p = 0 it is the
        // identity, so copy(dropout(t)) must equal t.
        let d = c.op("dropout", &[&t], vec![("p", J::Num(0.0)), ("seed", J::Int(2))]);
        c.op_as("d_copy", "copy", &[&d], vec![]);
        let tv = c.value(&t);
        let sm = c.op("softmax", &["x"], vec![]);
        let ls = c.op("log_softmax", &[&t], vec![]);
        let s1 = c.op(
            "sum",
            &[&ls],
            vec![("axes", ints(&[1])), ("keepdims", J::Bool(true))],
        );
        let u = c.op("add", &[&sm, &s1], vec![]);
        let u = chain(&mut c, &u, Dt::F32, 6, 0, &FLOAT_STEPS);
        c.out_expect("d_copy", tv).out(&u);
        v.push(c);
    }
}

fn main() {
    let root: PathBuf = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| "suites/inplace".into());
    let mut v = Vec::new();
    chains(&mut v);
    residuals(&mut v);
    optimizers(&mut v);
    fanouts(&mut v);
    subtensors(&mut v);
    explicit(&mut v);
    refusals(&mut v);
    write_suite(
        &root,
        &v,
        "# inplace suite\n\n\
         Graphs built pure in which the in-place pass rewrites many nodes: long\n\
         elementwise chains, residual blocks, optimizer updates on mutable inputs and on\n\
         parameters, fan-out of shared intermediates, chains of set/inc_subtensor, chains\n\
         through views; legal explicitly in-place graphs; and graphs where the pass must\n\
         refuse a rewrite. Each case must give its expected outputs both with the pass\n\
         and with `vigil exec --no-inplace`. Expected outputs come from the\n\
         numpy-semantics reference in testkit/src/suites/ops.rs, not from the engine.\n\n\
         Generated by `cargo run --example gen_inplace_suite -- suites/inplace`; do not edit by hand.\n\n",
    );
}
