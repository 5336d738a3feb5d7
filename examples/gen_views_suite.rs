//! Writes the `views` suite: `create_view` cases (every index kind, negative
//! and clamped bounds, negative strides, new axes, empty results, ranks 0 to
//! 4, views of views, views feeding elementwise ops, run-time index vectors).
//!
//! ```text
//! cargo run --example gen_views_suite -- suites/views
//! ```
//!
//! The expected outputs come from a brute-force reference written here from
//! numpy's basic-indexing rules (walk each interval index by index, then copy
//! element by element); the engine is used only to write .npy files. Running
//! the generator twice gives identical files.

use std::path::{Path, PathBuf};

use vigil_engine::{Element, Tensor};
use vigil_testkit::suites::json::{ints, s, strs, J};
use vigil_testkit::suites::ops::interval_picks;

// ----- the reference: dense C-order arrays and numpy's basic indexing -------

/// A dense array in C order.
#[derive(Clone, Debug)]
struct Arr<T> {
    shape: Vec<usize>,
    data: Vec<T>,
}

impl<T: Copy> Arr<T> {
    fn new(shape: &[usize], f: impl Fn(usize) -> T) -> Arr<T> {
        let n = shape.iter().product();
        Arr {
            shape: shape.to_vec(),
            data: (0..n).map(f).collect(),
        }
    }

    /// The element at multi-index `ix`.
    fn get(&self, ix: &[usize]) -> T {
        assert_eq!(ix.len(), self.shape.len());
        let mut flat = 0;
        for (&i, &d) in ix.iter().zip(&self.shape) {
            assert!(i < d, "reference: index {ix:?} outside {:?}", self.shape);
            flat = flat * d + i;
        }
        self.data[flat]
    }

    /// A new array of `shape` whose element at each multi-index is `f(ix)`.
    fn build(shape: Vec<usize>, f: impl Fn(&[usize]) -> T) -> Arr<T> {
        let n: usize = shape.iter().product();
        let mut data = Vec::with_capacity(n);
        let mut ix = vec![0usize; shape.len()];
        for _ in 0..n {
            data.push(f(&ix));
            for ax in (0..shape.len()).rev() {
                ix[ax] += 1;
                if ix[ax] < shape[ax] {
                    break;
                }
                ix[ax] = 0;
            }
        }
        Arr { shape, data }
    }

    fn map<U: Copy>(&self, f: impl Fn(T) -> U) -> Arr<U> {
        Arr {
            shape: self.shape.clone(),
            data: self.data.iter().map(|&x| f(x)).collect(),
        }
    }
}

/// `x[ix]` with numpy's basic-indexing rules, element by element.
fn index_ref<T: Copy>(x: &Arr<T>, ix: &[Ix]) -> Arr<T> {
    enum Out {
        Src { axis: usize, picks: Vec<usize> },
        New,
    }
    let mut fixed = vec![0usize; x.shape.len()];
    let mut outs = Vec::new();
    let mut axis = 0;
    for &i in ix {
        if !matches!(i, Ix::New | Ix::New5) {
            assert!(
                axis < x.shape.len(),
                "reference: too many indices for {:?}",
                x.shape
            );
        }
        match i {
            Ix::New | Ix::New5 => outs.push(Out::New),
            Ix::All => {
                outs.push(Out::Src {
                    axis,
                    picks: (0..x.shape[axis]).collect(),
                });
                axis += 1;
            }
            Ix::P(p) => {
                let d = x.shape[axis] as i64;
                let q = if p < 0 { p + d } else { p };
                assert!(
                    (0..d).contains(&q),
                    "reference: point {p} outside axis {axis} of {d}"
                );
                fixed[axis] = q as usize;
                axis += 1;
            }
            Ix::R(a, b, st) | Ix::Ri(a, b, st) => {
                let picks = interval_picks(x.shape[axis], a, b, st, matches!(i, Ix::Ri(..)));
                outs.push(Out::Src { axis, picks });
                axis += 1;
            }
        }
    }
    for ax in axis..x.shape.len() {
        outs.push(Out::Src {
            axis: ax,
            picks: (0..x.shape[ax]).collect(),
        });
    }
    let shape = outs
        .iter()
        .map(|o| match o {
            Out::Src { picks, .. } => picks.len(),
            Out::New => 1,
        })
        .collect();
    Arr::build(shape, |oix| {
        let mut src = fixed.clone();
        for (o, &k) in outs.iter().zip(oix) {
            if let Out::Src { axis, picks } = o {
                src[*axis] = picks[k];
            }
        }
        x.get(&src)
    })
}

/// `x.transpose(perm)`.
fn transpose_ref<T: Copy>(x: &Arr<T>, perm: &[usize]) -> Arr<T> {
    let shape = perm.iter().map(|&p| x.shape[p]).collect();
    Arr::build(shape, |oix| {
        let mut src = vec![0; perm.len()];
        for (k, &p) in perm.iter().enumerate() {
            src[p] = oix[k];
        }
        x.get(&src)
    })
}

/// `f(a, b)` with numpy broadcasting.
fn zip_ref<T: Copy, U: Copy>(a: &Arr<T>, b: &Arr<T>, f: impl Fn(T, T) -> U) -> Arr<U> {
    let n = a.shape.len().max(b.shape.len());
    let pad = |s: &[usize]| [vec![1; n - s.len()], s.to_vec()].concat();
    let (sa, sb) = (pad(&a.shape), pad(&b.shape));
    let shape = sa
        .iter()
        .zip(&sb)
        .map(|(&x, &y)| {
            assert!(
                x == y || x == 1 || y == 1,
                "reference: {sa:?} and {sb:?} do not broadcast"
            );
            if x == 1 {
                y
            } else {
                x
            }
        })
        .collect();
    Arr::build(shape, |ix| {
        let src = |s: &[usize]| -> Vec<usize> {
            ix[n - s.len()..]
                .iter()
                .zip(s)
                .map(|(&i, &d)| if d == 1 { 0 } else { i })
                .collect()
        };
        f(a.get(&src(&a.shape)), b.get(&src(&b.shape)))
    })
}

// ----- index vectors ----------------------------------------------------------

/// numpy's omitted slice bounds, spelled as far-away integers.
const LO: i64 = i64::MIN / 2;
const HI: i64 = i64::MAX / 2;

/// One index of the CreateView encoding.
#[derive(Clone, Copy, Debug)]
enum Ix {
    /// `[0, 1, 1, p, 1]`
    P(i64),
    /// `[1, 2, 1, start, end, stride, 0]`
    R(i64, i64, i64),
    /// `[1, 2, 1, start, end, stride, 1]`: the end is included.
    Ri(i64, i64, i64),
    /// `[2, 0, 1, 1]`
    All,
    /// `[3, 1, 10, 1]`
    New,
    /// `[3, 1, 1, 0, 1]`
    New5,
}

impl Ix {
    fn encode(self) -> Vec<i64> {
        match self {
            Ix::P(p) => vec![0, 1, 1, p, 1],
            Ix::R(a, b, st) => vec![1, 2, 1, a, b, st, 0],
            Ix::Ri(a, b, st) => vec![1, 2, 1, a, b, st, 1],
            Ix::All => vec![2, 0, 1, 1],
            Ix::New => vec![3, 1, 10, 1],
            Ix::New5 => vec![3, 1, 1, 0, 1],
        }
    }
}

// ----- data -------------------------------------------------------------------

/// Distinct values, about half of them negative, exact in f32.
fn f32s(shape: &[usize]) -> Arr<f32> {
    let n = shape.iter().product::<usize>() as f32;
    Arr::new(shape, |i| (i as f32 - n / 2.0) * 0.5 + 0.25)
}

fn f64s(shape: &[usize]) -> Arr<f64> {
    let n = shape.iter().product::<usize>() as f64;
    Arr::new(shape, |i| (i as f64 - n / 2.0) * 0.75 + 0.125)
}

fn i64s(shape: &[usize]) -> Arr<i64> {
    let n = shape.iter().product::<usize>() as i64;
    Arr::new(shape, |i| i as i64 * 3 - n)
}

fn i32s(shape: &[usize]) -> Arr<i32> {
    Arr::new(shape, |i| 1000 + 7 * i as i32)
}

fn bools(shape: &[usize]) -> Arr<bool> {
    Arr::new(shape, |i| (i * 7 + 3) % 5 < 2)
}

fn relu_f32(x: f32) -> f32 {
    if x > 0.0 {
        x
    } else {
        0.0
    }
}

// ----- cases --------------------------------------------------------------------

fn tensor<T: Element>(a: &Arr<T>) -> Tensor {
    Tensor::from_vec(&a.shape, a.data.clone()).expect("tensor")
}

struct Case {
    name: &'static str,
    about: &'static str,
    inputs: Vec<J>,
    constants: Vec<J>,
    nodes: Vec<J>,
    outputs: Vec<&'static str>,
    input_files: Vec<(String, Tensor)>,
    expected: Vec<(String, Tensor)>,
    n_index: usize,
}

impl Case {
    fn new(name: &'static str, about: &'static str) -> Case {
        Case {
            name,
            about,
            inputs: Vec::new(),
            constants: Vec::new(),
            nodes: Vec::new(),
            outputs: Vec::new(),
            input_files: Vec::new(),
            expected: Vec::new(),
            n_index: 0,
        }
    }

    /// A graph input fed from inputs/<name>.npy.
    fn input<T: Element>(&mut self, name: &str, a: &Arr<T>) -> &mut Self {
        let t = tensor(a);
        let shape: Vec<i64> = a.shape.iter().map(|&d| d as i64).collect();
        self.inputs.push(J::Obj(vec![
            ("name", s(name)),
            ("dtype", s(t.dtype().name())),
            ("shape", ints(&shape)),
        ]));
        self.input_files.push((name.to_string(), t));
        self
    }

    /// Index vectors as inline constants `i<k>`.
    fn const_indices(&mut self, ix: &[Ix]) -> Vec<String> {
        ix.iter()
            .map(|i| {
                let name = format!("i{}", self.n_index);
                self.n_index += 1;
                let v = i.encode();
                self.constants.push(J::Obj(vec![
                    ("name", s(&name)),
                    ("dtype", s("i64")),
                    ("shape", ints(&[v.len() as i64])),
                    ("data", ints(&v)),
                ]));
                name
            })
            .collect()
    }

    /// Index vectors as graph inputs `idx<k>` (i64, shape [k]), fed at run time.
    fn fed_indices(&mut self, ix: &[Ix]) -> Vec<String> {
        ix.iter()
            .map(|i| {
                let name = format!("idx{}", self.n_index);
                self.n_index += 1;
                let v = i.encode();
                self.input(
                    &name,
                    &Arr {
                        shape: vec![v.len()],
                        data: v,
                    },
                );
                name
            })
            .collect()
    }

    fn node(&mut self, name: &str, op: &str, inputs: &[&str], out: &str, attrs: Option<J>) -> &mut Self {
        let mut kv = vec![
            ("name", s(name)),
            ("op", s(op)),
            ("inputs", strs(inputs)),
            ("outputs", strs(&[out])),
        ];
        if let Some(a) = attrs {
            kv.push(("attrs", a));
        }
        self.nodes.push(J::Obj(kv));
        self
    }

    /// `out = create_view(src, idx...)`.
    fn view(&mut self, name: &str, src: &str, idx: &[String], out: &str) -> &mut Self {
        let mut inputs = vec![src];
        inputs.extend(idx.iter().map(String::as_str));
        self.node(name, "create_view", &inputs, out, None)
    }

    /// A graph output with its expected value.
    fn output<T: Element>(&mut self, name: &'static str, expected: &Arr<T>) -> &mut Self {
        self.outputs.push(name);
        self.expected.push((name.to_string(), tensor(expected)));
        self
    }

    fn graph_json(&self) -> String {
        let mut kv = vec![("format", s("vigil-graph/1")), ("name", s(self.name))];
        kv.push(("inputs", J::Arr(self.inputs.clone())));
        if !self.constants.is_empty() {
            kv.push(("constants", J::Arr(self.constants.clone())));
        }
        kv.push(("nodes", J::Arr(self.nodes.clone())));
        kv.push(("outputs", strs(&self.outputs)));
        let mut out = String::new();
        J::Obj(kv).print(0, &mut out);
        out.push('\n');
        out
    }

    fn write(&self, root: &Path) {
        let dir = root.join(self.name);
        std::fs::create_dir_all(dir.join("inputs")).expect("mkdir inputs");
        std::fs::create_dir_all(dir.join("expected")).expect("mkdir expected");
        let text = self.graph_json();
        serde_json::from_str::<serde_json::Value>(&text).expect("generated JSON parses");
        std::fs::write(dir.join("graph.json"), text).expect("write graph.json");
        for (n, t) in &self.input_files {
            t.write_npy(dir.join("inputs").join(format!("{n}.npy")))
                .expect("write input");
        }
        for (n, t) in &self.expected {
            t.write_npy(dir.join("expected").join(format!("{n}.npy")))
                .expect("write expected");
        }
    }
}

/// The most common shape of case: `y = create_view(x, constant indices)`.
fn view_case<T: Element>(name: &'static str, about: &'static str, x: Arr<T>, ix: &[Ix]) -> Case {
    let mut c = Case::new(name, about);
    c.input("x", &x);
    let idx = c.const_indices(ix);
    c.view("view", "x", &idx, "y");
    c.output("y", &index_ref(&x, ix));
    c
}

fn cases() -> Vec<Case> {
    let mut v = vec![
        // ---- points
        view_case(
            "point_rank1",
            "x[2] on f32 [6]: a rank-0 view",
            f32s(&[6]),
            &[Ix::P(2)],
        ),
        view_case(
            "point_negative_rank1",
            "x[-1] on i64 [6]",
            i64s(&[6]),
            &[Ix::P(-1)],
        ),
        view_case(
            "point_negative_rank3",
            "x[-1, :, -2] on f32 [3, 4, 5]",
            f32s(&[3, 4, 5]),
            &[Ix::P(-1), Ix::All, Ix::P(-2)],
        ),
        view_case(
            "points_every_axis_rank2",
            "x[1, -4] on i32 [3, 4]: rank 0",
            i32s(&[3, 4]),
            &[Ix::P(1), Ix::P(-4)],
        ),
        // ---- intervals
        view_case(
            "interval_exclusive",
            "x[2:7] on f64 [10]",
            f64s(&[10]),
            &[Ix::R(2, 7, 1)],
        ),
        view_case(
            "interval_exclusive_stride3",
            "x[1:9:3] on f32 [10]",
            f32s(&[10]),
            &[Ix::R(1, 9, 3)],
        ),
        view_case(
            "interval_inclusive",
            "x[2..=7] on f64 [10]",
            f64s(&[10]),
            &[Ix::Ri(2, 7, 1)],
        ),
        view_case(
            "interval_inclusive_end_minus_one",
            "x[3..=-1] on i64 [7]: through the last element",
            i64s(&[7]),
            &[Ix::Ri(3, -1, 1)],
        ),
        view_case(
            "interval_inclusive_stride2",
            "x[0..=8:2] on i32 [9]",
            i32s(&[9]),
            &[Ix::Ri(0, 8, 2)],
        ),
        view_case(
            "interval_negative_bounds",
            "x[-7:-2] on f32 [10]",
            f32s(&[10]),
            &[Ix::R(-7, -2, 1)],
        ),
        view_case(
            "interval_negative_bounds_rank2",
            "x[-3:-1, -5:6:2] on f64 [4, 6]",
            f64s(&[4, 6]),
            &[Ix::R(-3, -1, 1), Ix::R(-5, 6, 2)],
        ),
        view_case(
            "interval_negative_stride",
            "x[::-1] on f32 [10]",
            f32s(&[10]),
            &[Ix::R(-1, LO, -1)],
        ),
        view_case(
            "interval_negative_stride_even_span",
            "x[5:1:-2] on i64 [10]: [5, 3]",
            i64s(&[10]),
            &[Ix::R(5, 1, -2)],
        ),
        view_case(
            "interval_negative_stride_odd_span",
            "x[7:2:-2] on i64 [10]: [7, 5, 3]",
            i64s(&[10]),
            &[Ix::R(7, 2, -2)],
        ),
        view_case(
            "interval_reverse_step2_even_length",
            "x[::-2] on f64 [8]: [7, 5, 3, 1]",
            f64s(&[8]),
            &[Ix::R(HI, LO, -2)],
        ),
        view_case(
            "interval_negative_stride_inclusive",
            "x[7..=1:-3] on i32 [10]: [7, 4, 1]",
            i32s(&[10]),
            &[Ix::Ri(7, 1, -3)],
        ),
        view_case(
            "interval_negative_stride_rank2",
            "x[::-1, -1:0:-3] on f32 [4, 5]",
            f32s(&[4, 5]),
            &[Ix::R(HI, LO, -1), Ix::R(-1, 0, -3)],
        ),
        view_case(
            "interval_clamp_both_ends",
            "x[-100:100] on f32 [6]: the whole axis",
            f32s(&[6]),
            &[Ix::R(-100, 100, 1)],
        ),
        view_case(
            "interval_clamp_end_stride2",
            "x[3:50:2] on i64 [7]",
            i64s(&[7]),
            &[Ix::R(3, 50, 2)],
        ),
        view_case(
            "interval_clamp_negative_stride",
            "x[100:-100:-3] on f64 [7]: [6, 3, 0]",
            f64s(&[7]),
            &[Ix::R(100, -100, -3)],
        ),
        view_case(
            "interval_clamp_inclusive_end",
            "x[1..=20] on i32 [5]: clamps to the end",
            i32s(&[5]),
            &[Ix::Ri(1, 20, 1)],
        ),
        view_case(
            "interval_inclusive_end_i64_max",
            "x[0..=i64::MAX] on f32 [5]: the whole axis",
            f32s(&[5]),
            &[Ix::Ri(0, i64::MAX, 1)],
        ),
        view_case(
            "interval_stride_i64_max",
            "x[0::i64::MAX] on i64 [5]: just x[0]",
            i64s(&[5]),
            &[Ix::R(0, HI, i64::MAX)],
        ),
        // ---- all and new axes
        view_case(
            "all_explicit_rank2",
            "x[:, :] on f32 [3, 4]",
            f32s(&[3, 4]),
            &[Ix::All, Ix::All],
        ),
        view_case(
            "all_then_point",
            "x[:, 2] on i64 [3, 4]",
            i64s(&[3, 4]),
            &[Ix::All, Ix::P(2)],
        ),
        view_case(
            "new_axis_leading",
            "x[None] on f32 [2, 3] ([3,1,10,1])",
            f32s(&[2, 3]),
            &[Ix::New],
        ),
        view_case(
            "new_axis_five_value_encoding",
            "x[:, None] on f64 [2, 3] ([3,1,1,0,1])",
            f64s(&[2, 3]),
            &[Ix::All, Ix::New5],
        ),
        view_case(
            "new_axis_mixed",
            "x[None, 1, None, ::2, None] on i32 [3, 4]",
            i32s(&[3, 4]),
            &[Ix::New, Ix::P(1), Ix::New, Ix::R(LO, HI, 2), Ix::New],
        ),
        view_case(
            "new_axis_trailing_both_encodings",
            "x[:, :, None, None] on bool [2, 3]",
            bools(&[2, 3]),
            &[Ix::All, Ix::All, Ix::New, Ix::New5],
        ),
        // ---- empty results
        view_case(
            "empty_interval",
            "x[3:1] on f32 [5]: shape [0]",
            f32s(&[5]),
            &[Ix::R(3, 1, 1)],
        ),
        view_case(
            "empty_interval_rank2",
            "x[:, 4:4] on f64 [3, 5]: shape [3, 0]",
            f64s(&[3, 5]),
            &[Ix::All, Ix::R(4, 4, 1)],
        ),
        view_case(
            "empty_negative_stride",
            "x[1:3:-1] on i64 [6]",
            i64s(&[6]),
            &[Ix::R(1, 3, -1)],
        ),
        view_case(
            "empty_start_past_end",
            "x[10:20] on bool [4]",
            bools(&[4]),
            &[Ix::R(10, 20, 1)],
        ),
        // ---- ranks
        view_case("rank0_no_index", "create_view(x) on a rank-0 f64", f64s(&[]), &[]),
        view_case(
            "rank0_new_axes",
            "x[None, None] on a rank-0 i32, both encodings",
            i32s(&[]),
            &[Ix::New, Ix::New5],
        ),
        view_case(
            "rank4_mixed",
            "x[1, ::-1, None, 1:4, -1] on f32 [2, 3, 4, 5]",
            f32s(&[2, 3, 4, 5]),
            &[Ix::P(1), Ix::R(HI, LO, -1), Ix::New, Ix::R(1, 4, 1), Ix::P(-1)],
        ),
        view_case(
            "rank4_fewer_indices",
            "x[-1] on i64 [2, 3, 4, 5]",
            i64s(&[2, 3, 4, 5]),
            &[Ix::P(-1)],
        ),
        view_case(
            "rank3_fewer_indices",
            "x[1:] on f64 [3, 4, 2]",
            f64s(&[3, 4, 2]),
            &[Ix::R(1, HI, 1)],
        ),
        view_case(
            "rank3_point_second_axis",
            "x[:, -3] on i32 [3, 4, 2]",
            i32s(&[3, 4, 2]),
            &[Ix::All, Ix::P(-3)],
        ),
        view_case(
            "bool_rank2",
            "x[0:4:3, 1:] on bool [4, 4]",
            bools(&[4, 4]),
            &[Ix::R(0, 4, 3), Ix::R(1, HI, 1)],
        ),
    ];

    // NaN and infinities pass through a view unchanged.
    {
        let x = Arr {
            shape: vec![2, 3],
            data: vec![1.5, f64::NAN, -2.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN],
        };
        v.push(view_case(
            "nan_inf_view",
            "x[::-1, 1:] on f64 [2, 3] holding NaN and infinities",
            x,
            &[Ix::R(HI, LO, -1), Ix::R(1, HI, 1)],
        ));
    }

    // ---- views of views
    {
        let x = f32s(&[6, 4]);
        let mut c = Case::new("view_of_view", "x[1:][::-1, 2] on f32 [6, 4]");
        c.input("x", &x);
        let (a, b) = ([Ix::R(1, HI, 1)], [Ix::R(HI, LO, -1), Ix::P(2)]);
        let ia = c.const_indices(&a);
        let ib = c.const_indices(&b);
        c.view("view1", "x", &ia, "y").view("view2", "y", &ib, "z");
        let y = index_ref(&x, &a);
        c.output("y", &y).output("z", &index_ref(&y, &b));
        v.push(c);
    }
    {
        let x = i64s(&[12]);
        let mut c = Case::new("view_of_reversed_view", "x[::-1][1:-1:3] on i64 [12]");
        c.input("x", &x);
        let (a, b) = ([Ix::R(-1, LO, -1)], [Ix::R(1, -1, 3)]);
        let ia = c.const_indices(&a);
        let ib = c.const_indices(&b);
        c.view("view1", "x", &ia, "y").view("view2", "y", &ib, "z");
        let y = index_ref(&x, &a);
        c.output("z", &index_ref(&y, &b));
        v.push(c);
    }
    {
        let x = f64s(&[3, 4]);
        let mut c = Case::new("view_of_transpose", "x.T[1:, -1] on f64 [3, 4]");
        c.input("x", &x);
        let ix = [Ix::R(1, HI, 1), Ix::P(-1)];
        let idx = c.const_indices(&ix);
        c.node("t", "transpose", &["x"], "xt", None)
            .view("view", "xt", &idx, "y");
        c.output("y", &index_ref(&transpose_ref(&x, &[1, 0]), &ix));
        v.push(c);
    }
    {
        let x = i32s(&[2, 3, 4]);
        let mut c = Case::new(
            "view_of_transpose_perm",
            "x.transpose(2, 0, 1)[::-2, None, 1] on i32 [2, 3, 4]",
        );
        c.input("x", &x);
        let ix = [Ix::R(HI, LO, -2), Ix::New, Ix::P(1)];
        let idx = c.const_indices(&ix);
        c.node(
            "t",
            "transpose",
            &["x"],
            "xt",
            Some(J::Obj(vec![("perm", ints(&[2, 0, 1]))])),
        )
        .view("view", "xt", &idx, "y");
        c.output("y", &index_ref(&transpose_ref(&x, &[2, 0, 1]), &ix));
        v.push(c);
    }

    // ---- views feeding elementwise ops
    {
        let x = f32s(&[4, 6]);
        let mut c = Case::new("relu_of_view", "relu(x[::2, ::-1]) on f32 [4, 6]");
        c.input("x", &x);
        let ix = [Ix::R(LO, HI, 2), Ix::R(HI, LO, -1)];
        let idx = c.const_indices(&ix);
        c.view("view", "x", &idx, "y")
            .node("relu", "relu", &["y"], "r", None);
        let y = index_ref(&x, &ix);
        c.output("y", &y).output("r", &y.map(relu_f32));
        v.push(c);
    }
    {
        let x = i64s(&[3, 5]);
        let mut c = Case::new("relu_of_view_i64", "relu(x[-2:, 1::2]) on i64 [3, 5]");
        c.input("x", &x);
        let ix = [Ix::R(-2, HI, 1), Ix::R(1, HI, 2)];
        let idx = c.const_indices(&ix);
        c.view("view", "x", &idx, "y")
            .node("relu", "relu", &["y"], "r", None);
        c.output("r", &index_ref(&x, &ix).map(|a: i64| a.max(0)));
        v.push(c);
    }
    {
        let x = f32s(&[3, 5]);
        let mut c = Case::new(
            "relu_of_empty_view",
            "relu(x[:, 2:2]) on f32 [3, 5]: shape [3, 0]",
        );
        c.input("x", &x);
        let ix = [Ix::All, Ix::R(2, 2, 1)];
        let idx = c.const_indices(&ix);
        c.view("view", "x", &idx, "y")
            .node("relu", "relu", &["y"], "r", None);
        let y = index_ref(&x, &ix);
        c.output("y", &y).output("r", &y.map(relu_f32));
        v.push(c);
    }
    {
        let x = f64s(&[10]);
        let mut c = Case::new("add_two_views", "x[:-1] + x[1:] on f64 [10]");
        c.input("x", &x);
        let (a, b) = ([Ix::R(LO, -1, 1)], [Ix::R(1, HI, 1)]);
        let ia = c.const_indices(&a);
        let ib = c.const_indices(&b);
        c.view("view_a", "x", &ia, "a")
            .view("view_b", "x", &ib, "b")
            .node("add", "add", &["a", "b"], "s", None);
        let (ya, yb) = (index_ref(&x, &a), index_ref(&x, &b));
        c.output("a", &ya)
            .output("b", &yb)
            .output("s", &zip_ref(&ya, &yb, |p, q| p + q));
        v.push(c);
    }
    {
        let x = i32s(&[5]);
        let mut c = Case::new(
            "add_views_broadcast",
            "x[:, None] + x[None, ::-1] on i32 [5]: shape [5, 5]",
        );
        c.input("x", &x);
        let (a, b) = ([Ix::All, Ix::New], [Ix::New5, Ix::R(HI, LO, -1)]);
        let ia = c.const_indices(&a);
        let ib = c.const_indices(&b);
        c.view("view_a", "x", &ia, "a")
            .view("view_b", "x", &ib, "b")
            .node("add", "add", &["a", "b"], "s", None);
        let (ya, yb) = (index_ref(&x, &a), index_ref(&x, &b));
        c.output("s", &zip_ref(&ya, &yb, |p, q| p + q));
        v.push(c);
    }

    // ---- index vectors fed at run time
    {
        let x = f32s(&[4, 5]);
        let mut c = Case::new(
            "fed_index_point",
            "x[idx0] with idx0 = [0,1,1,2,1] fed from inputs/",
        );
        c.input("x", &x);
        let ix = [Ix::P(2)];
        let idx = c.fed_indices(&ix);
        c.view("view", "x", &idx, "y").output("y", &index_ref(&x, &ix));
        v.push(c);
    }
    {
        let x = f64s(&[4, 5]);
        let mut c = Case::new(
            "fed_index_negative",
            "x[-1, -1:-6:-1] with both index vectors fed",
        );
        c.input("x", &x);
        let ix = [Ix::P(-1), Ix::R(-1, -6, -1)];
        let idx = c.fed_indices(&ix);
        c.view("view", "x", &idx, "y").output("y", &index_ref(&x, &ix));
        v.push(c);
    }
    {
        let x = i64s(&[8]);
        let mut c = Case::new("fed_index_interval_inclusive", "x[-6..=-2:2] fed: [2, 4, 6]");
        c.input("x", &x);
        let ix = [Ix::Ri(-6, -2, 2)];
        let idx = c.fed_indices(&ix);
        c.view("view", "x", &idx, "y").output("y", &index_ref(&x, &ix));
        v.push(c);
    }
    {
        let x = i32s(&[3, 4]);
        let mut c = Case::new(
            "fed_index_new_axis",
            "x[None, -2] with [3,1,1,0,1] and [0,1,1,-2,1] fed",
        );
        c.input("x", &x);
        let ix = [Ix::New5, Ix::P(-2)];
        let idx = c.fed_indices(&ix);
        c.view("view", "x", &idx, "y").output("y", &index_ref(&x, &ix));
        v.push(c);
    }
    {
        let x = bools(&[3, 4, 5]);
        let mut c = Case::new(
            "fed_index_mixed_with_constants",
            "x[:, -1, ::-2] on bool [3, 4, 5]; the point is fed",
        );
        c.input("x", &x);
        let ix = [Ix::All, Ix::P(-1), Ix::R(-1, LO, -2)];
        let a = c.const_indices(&ix[..1]);
        let b = c.fed_indices(&ix[1..2]);
        let d = c.const_indices(&ix[2..]);
        c.view("view", "x", &[a, b, d].concat(), "y")
            .output("y", &index_ref(&x, &ix));
        v.push(c);
    }
    {
        let x = f32s(&[6]);
        let mut c = Case::new("fed_index_relu", "relu(x[-2::-1]) with the interval fed");
        c.input("x", &x);
        let ix = [Ix::R(-2, LO, -1)];
        let idx = c.fed_indices(&ix);
        c.view("view", "x", &idx, "y")
            .node("relu", "relu", &["y"], "r", None);
        let y = index_ref(&x, &ix);
        c.output("y", &y).output("r", &y.map(relu_f32));
        v.push(c);
    }
    v
}

fn main() {
    let root: PathBuf = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| "suites/views".into());
    let cases = cases();
    let mut names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "case names must be unique");

    // Remove the cases of an earlier run, so renamed cases do not linger.
    if root.is_dir() {
        for e in std::fs::read_dir(&root).expect("list suite dir") {
            let p = e.expect("dir entry").path();
            if p.is_dir() && p.join("graph.json").is_file() {
                std::fs::remove_dir_all(&p).expect("remove old case");
            }
        }
    }
    std::fs::create_dir_all(&root).expect("create suite dir");
    for c in &cases {
        c.write(&root);
    }
    let mut readme = String::from(
        "# views suite\n\n\
         `create_view` cases: every index kind, negative and clamped bounds, negative\n\
         strides, new axes, empty results, ranks 0 to 4, views of views, views feeding\n\
         elementwise ops, and index vectors fed at run time. Expected outputs come from a\n\
         brute-force numpy-semantics reference in the generator, not from the engine.\n\n\
         Generated by `cargo run --example gen_views_suite -- suites/views`; do not edit by hand.\n\n",
    );
    for c in &cases {
        readme.push_str(&format!("- `{}`: {}\n", c.name, c.about));
    }
    std::fs::write(root.join("README.md"), readme).expect("write README.md");
    println!("wrote {} cases to {}", cases.len(), root.display());
}
