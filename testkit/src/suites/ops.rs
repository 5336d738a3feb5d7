//! The `ops` suite: every op of docs/ops.md with every dtype it accepts,
//! on contiguous inputs, on strided inputs (made inside the graph from a
//! contiguous input by `transpose` or by a `create_view` with a negative
//! stride and a step-2 interval) and on broadcast inputs (shapes that
//! broadcast, and `broadcast_to`). Written by
//!
//! ```text
//! cargo run --example gen_ops_suite -- suites/ops
//! ```
//!
//! The expected outputs come from a small reference interpreter written here
//! from numpy's semantics (plain loops over f64/i64/bool values, rounded to
//! f32 or wrapped to i32 after each op); the engine is used only to write
//! .npy files. Random ops have no expected value; their cases check
//! deterministic properties instead (range, shape, `p = 0`). Writing the
//! suite twice gives identical files.
//!
//! The `inplace` suite's generator reuses the reference and the case
//! builder, so everything but [`write_ops_suite`] and the case catalogue is
//! shared.

use std::collections::BTreeMap;
use std::path::Path;

use vigil_engine::Tensor;

pub use super::json::{ints, s, strs, J};

fn num(x: f64) -> J {
    if x.is_nan() {
        s("nan")
    } else if x.is_infinite() {
        s(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        J::Num(x)
    }
}

/// Node attributes, in the order they are printed.
pub type At = Vec<(&'static str, J)>;

fn at_get<'a>(at: &'a At, key: &str) -> Option<&'a J> {
    at.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

fn at_i64(at: &At, key: &str) -> Option<i64> {
    match at_get(at, key)? {
        J::Int(i) => Some(*i),
        other => panic!("reference: attr '{key}' is {other:?}, not an integer"),
    }
}

fn at_list(at: &At, key: &str) -> Option<Vec<i64>> {
    match at_get(at, key)? {
        J::Arr(v) => Some(
            v.iter()
                .map(|x| match x {
                    J::Int(i) => *i,
                    other => panic!("reference: attr '{key}' holds {other:?}"),
                })
                .collect(),
        ),
        other => panic!("reference: attr '{key}' is {other:?}, not a list"),
    }
}

fn at_bool(at: &At, key: &str) -> bool {
    match at_get(at, key) {
        None => false,
        Some(J::Bool(b)) => *b,
        Some(other) => panic!("reference: attr '{key}' is {other:?}, not a bool"),
    }
}

fn at_dtype(at: &At, key: &str) -> Option<Dt> {
    match at_get(at, key)? {
        J::Str(v) => Some(Dt::parse(v)),
        other => panic!("reference: attr '{key}' is {other:?}, not a dtype"),
    }
}

// ----- the reference: dense C-order arrays of tagged values ------------------

/// Element types, as in docs/ops.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dt {
    F32,
    F64,
    I64,
    I32,
    Bool,
}

pub const DTYPES: [Dt; 5] = [Dt::F32, Dt::F64, Dt::I64, Dt::I32, Dt::Bool];
pub const NUMERIC: [Dt; 4] = [Dt::F32, Dt::F64, Dt::I64, Dt::I32];
pub const FLOATS: [Dt; 2] = [Dt::F32, Dt::F64];

impl Dt {
    pub fn name(self) -> &'static str {
        match self {
            Dt::F32 => "f32",
            Dt::F64 => "f64",
            Dt::I64 => "i64",
            Dt::I32 => "i32",
            Dt::Bool => "bool",
        }
    }

    fn parse(v: &str) -> Dt {
        *DTYPES
            .iter()
            .find(|d| d.name() == v)
            .unwrap_or_else(|| panic!("reference: unknown dtype {v}"))
    }

    pub fn is_float(self) -> bool {
        matches!(self, Dt::F32 | Dt::F64)
    }

    pub fn is_int(self) -> bool {
        matches!(self, Dt::I64 | Dt::I32)
    }
}

/// One element: floats are held as f64 (rounded to f32 when the dtype is
/// f32), integers as i64 (wrapped to i32 when the dtype is i32).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum V {
    F(f64),
    I(i64),
    B(bool),
}

fn fv(v: V) -> f64 {
    match v {
        V::F(x) => x,
        other => panic!("reference: {other:?} is not a float"),
    }
}

fn iv(v: V) -> i64 {
    match v {
        V::I(x) => x,
        other => panic!("reference: {other:?} is not an integer"),
    }
}

fn bv(v: V) -> bool {
    match v {
        V::B(x) => x,
        other => panic!("reference: {other:?} is not a bool"),
    }
}

/// Rounds or wraps `v` into `dt`, as storing it in an array of `dt` does.
fn fix(dt: Dt, v: V) -> V {
    match (dt, v) {
        (Dt::F32, V::F(x)) => V::F(x as f32 as f64),
        (Dt::F64, V::F(x)) => V::F(x),
        (Dt::I32, V::I(x)) => V::I(x as i32 as i64),
        (Dt::I64, V::I(x)) => V::I(x),
        (Dt::Bool, V::B(b)) => V::B(b),
        _ => panic!("reference: {v:?} is not a {dt:?}"),
    }
}

/// A dense array in C order.
#[derive(Clone, Debug)]
pub struct A {
    pub dt: Dt,
    pub shape: Vec<usize>,
    pub v: Vec<V>,
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The flat C-order position of `ix` in `shape`.
fn flat(shape: &[usize], ix: &[usize]) -> usize {
    assert_eq!(ix.len(), shape.len(), "reference: index rank");
    let mut f = 0;
    for (&i, &d) in ix.iter().zip(shape) {
        assert!(i < d, "reference: index {ix:?} outside {shape:?}");
        f = f * d + i;
    }
    f
}

/// Every multi-index of `shape`, in C order.
fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n = numel(shape);
    let mut out = Vec::with_capacity(n);
    let mut ix = vec![0usize; shape.len()];
    for _ in 0..n {
        out.push(ix.clone());
        for ax in (0..shape.len()).rev() {
            ix[ax] += 1;
            if ix[ax] < shape[ax] {
                break;
            }
            ix[ax] = 0;
        }
    }
    out
}

impl A {
    /// An array of `dt` from f64 values (bools: `!= 0`); the values must be
    /// exact in `dt`.
    pub fn from_f64(dt: Dt, shape: &[usize], vals: &[f64]) -> A {
        assert_eq!(
            numel(shape),
            vals.len(),
            "reference: {shape:?} needs {} values",
            numel(shape)
        );
        let v = vals
            .iter()
            .map(|&x| match dt {
                Dt::F64 => V::F(x),
                Dt::F32 => {
                    assert!(x.is_nan() || x as f32 as f64 == x, "{x} is not exact in f32");
                    V::F(x)
                }
                Dt::I64 | Dt::I32 => {
                    assert!(x.fract() == 0.0, "{x} is not an integer");
                    fix(dt, V::I(x as i64))
                }
                Dt::Bool => V::B(x != 0.0),
            })
            .collect();
        A {
            dt,
            shape: shape.to_vec(),
            v,
        }
    }

    pub fn ints(dt: Dt, shape: &[usize], vals: &[i64]) -> A {
        assert!(dt.is_int());
        assert_eq!(numel(shape), vals.len());
        for &x in vals {
            assert_eq!(fix(dt, V::I(x)), V::I(x), "{x} does not fit {dt:?}");
        }
        A {
            dt,
            shape: shape.to_vec(),
            v: vals.iter().map(|&x| V::I(x)).collect(),
        }
    }

    pub fn bools(shape: &[usize], vals: &[bool]) -> A {
        assert_eq!(numel(shape), vals.len());
        A {
            dt: Dt::Bool,
            shape: shape.to_vec(),
            v: vals.iter().map(|&x| V::B(x)).collect(),
        }
    }

    /// A 0-d array.
    pub fn scalar(dt: Dt, x: f64) -> A {
        A::from_f64(dt, &[], &[x])
    }

    fn build(dt: Dt, shape: Vec<usize>, f: impl Fn(&[usize]) -> V) -> A {
        let v = indices(&shape).iter().map(|ix| fix(dt, f(ix))).collect();
        A { dt, shape, v }
    }

    pub fn get(&self, ix: &[usize]) -> V {
        self.v[flat(&self.shape, ix)]
    }

    pub fn map(&self, dt: Dt, f: impl Fn(V) -> V) -> A {
        A {
            dt,
            shape: self.shape.clone(),
            v: self.v.iter().map(|&x| fix(dt, f(x))).collect(),
        }
    }

    fn same(&self, other: &A) -> bool {
        self.dt == other.dt
            && self.shape == other.shape
            && self.v.iter().zip(&other.v).all(|(a, b)| match (a, b) {
                (V::F(x), V::F(y)) => x.to_bits() == y.to_bits(),
                _ => a == b,
            })
    }

    pub fn tensor(&self) -> Tensor {
        let t = match self.dt {
            Dt::F32 => Tensor::from_vec(&self.shape, self.v.iter().map(|&x| fv(x) as f32).collect()),
            Dt::F64 => Tensor::from_vec(&self.shape, self.v.iter().map(|&x| fv(x)).collect()),
            Dt::I64 => Tensor::from_vec(&self.shape, self.v.iter().map(|&x| iv(x)).collect()),
            Dt::I32 => Tensor::from_vec(&self.shape, self.v.iter().map(|&x| iv(x) as i32).collect()),
            Dt::Bool => Tensor::from_vec(&self.shape, self.v.iter().map(|&x| bv(x)).collect()),
        };
        t.expect("tensor")
    }

    fn json_data(&self) -> J {
        J::Arr(
            self.v
                .iter()
                .map(|&x| match x {
                    V::F(f) => num(f),
                    V::I(i) => J::Int(i),
                    V::B(b) => J::Bool(b),
                })
                .collect(),
        )
    }
}

/// numpy's broadcast of two shapes.
fn bshape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let n = a.len().max(b.len());
    let pad = |s: &[usize]| [vec![1; n - s.len()], s.to_vec()].concat();
    let (sa, sb) = (pad(a), pad(b));
    sa.iter()
        .zip(&sb)
        .map(|(&x, &y)| {
            assert!(
                x == y || x == 1 || y == 1,
                "reference: {a:?} and {b:?} do not broadcast"
            );
            if x == 1 {
                y
            } else {
                x
            }
        })
        .collect()
}

/// The element of `a` that broadcasts to position `ix` of a larger shape.
fn bget(a: &A, ix: &[usize]) -> V {
    let lead = ix.len() - a.shape.len();
    let src: Vec<usize> = ix[lead..]
        .iter()
        .zip(&a.shape)
        .map(|(&i, &d)| if d == 1 { 0 } else { i })
        .collect();
    a.get(&src)
}

fn zip2(a: &A, b: &A, dt: Dt, f: impl Fn(V, V) -> V) -> A {
    A::build(dt, bshape(&a.shape, &b.shape), |ix| f(bget(a, ix), bget(b, ix)))
}

fn bcast_to(a: &A, shape: &[usize]) -> A {
    assert!(
        a.shape.len() <= shape.len(),
        "reference: cannot broadcast {:?} to {shape:?}",
        a.shape
    );
    assert_eq!(
        bshape(&a.shape, shape),
        shape,
        "reference: cannot broadcast {:?} to {shape:?}",
        a.shape
    );
    A::build(a.dt, shape.to_vec(), |ix| bget(a, ix))
}

fn transpose_ref(a: &A, perm: &[usize]) -> A {
    let shape = perm.iter().map(|&p| a.shape[p]).collect();
    A::build(a.dt, shape, |oix| {
        let mut src = vec![0; perm.len()];
        for (k, &p) in perm.iter().enumerate() {
            src[p] = oix[k];
        }
        a.get(&src)
    })
}

fn resolve_axis(ax: i64, n: usize) -> usize {
    let r = if ax < 0 { ax + n as i64 } else { ax };
    assert!((0..n as i64).contains(&r), "reference: axis {ax} of {n}");
    r as usize
}

// ----- elementwise semantics (numpy's) ---------------------------------------

fn maximum_f(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x >= y {
        x
    } else {
        y
    }
}

fn minimum_f(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x <= y {
        x
    } else {
        y
    }
}

/// Integer power by repeated multiplication, wrapping; a negative exponent
/// gives 0, or +-1 for a base of +-1 (docs/ops.md; numpy raises).
fn ipow(b: i64, e: i64) -> i64 {
    if e < 0 {
        return match b {
            1 => 1,
            -1 => {
                if e % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let mut r: i64 = 1;
    for _ in 0..e {
        r = r.wrapping_mul(b);
    }
    r
}

fn binary(op: &str, dt: Dt, x: V, y: V) -> V {
    if dt.is_float() {
        let (x, y) = (fv(x), fv(y));
        let r = match op {
            "add" => x + y,
            "sub" => x - y,
            "mul" => x * y,
            "div" => x / y,
            "pow" => x.powf(y),
            "maximum" => maximum_f(x, y),
            "minimum" => minimum_f(x, y),
            _ => panic!("reference: binary {op}"),
        };
        fix(dt, V::F(r))
    } else {
        let (x, y) = (iv(x), iv(y));
        let r = match op {
            "add" => x.wrapping_add(y),
            "sub" => x.wrapping_sub(y),
            "mul" => x.wrapping_mul(y),
            // numpy's true division: integers become f64.
            "div" => return V::F(x as f64 / y as f64),
            "pow" => ipow(x, y),
            "maximum" => x.max(y),
            "minimum" => x.min(y),
            _ => panic!("reference: binary {op}"),
        };
        fix(dt, V::I(r))
    }
}

fn compare(op: &str, x: V, y: V) -> bool {
    use std::cmp::Ordering::*;
    let ord = match (x, y) {
        (V::F(a), V::F(b)) => a.partial_cmp(&b),
        (V::I(a), V::I(b)) => Some(a.cmp(&b)),
        (V::B(a), V::B(b)) => Some(a.cmp(&b)),
        _ => panic!("reference: compare {x:?} {y:?}"),
    };
    match op {
        "eq" => ord == Some(Equal),
        "ne" => ord != Some(Equal),
        "lt" => ord == Some(Less),
        "le" => matches!(ord, Some(Less | Equal)),
        "gt" => ord == Some(Greater),
        "ge" => matches!(ord, Some(Greater | Equal)),
        _ => panic!("reference: compare {op}"),
    }
}

fn unary(op: &str, dt: Dt, x: V) -> V {
    if dt.is_float() {
        let x = fv(x);
        let r = match op {
            "neg" => -x,
            "abs" => x.abs(),
            "relu" => maximum_f(x, 0.0),
            "exp" => x.exp(),
            "log" => x.ln(),
            "sqrt" => x.sqrt(),
            "tanh" => x.tanh(),
            "sigmoid" => 1.0 / (1.0 + (-x).exp()),
            _ => panic!("reference: unary {op}"),
        };
        fix(dt, V::F(r))
    } else {
        let x = iv(x);
        let r = match op {
            "neg" => x.wrapping_neg(),
            "abs" => x.wrapping_abs(),
            "relu" => x.max(0),
            _ => panic!("reference: unary {op} on integers"),
        };
        fix(dt, V::I(r))
    }
}

/// numpy's `astype`.
fn cast(v: V, to: Dt) -> V {
    match (v, to) {
        (V::F(x), Dt::F32 | Dt::F64) => fix(to, V::F(x)),
        (V::F(x), Dt::I64 | Dt::I32) => {
            let t = x.trunc();
            let lim = if to == Dt::I32 {
                2f64.powi(31)
            } else {
                2f64.powi(63)
            };
            assert!(
                t >= -lim && t < lim,
                "reference: {x} is out of range for {to:?} (undefined in numpy)"
            );
            V::I(t as i64)
        }
        (V::F(x), Dt::Bool) => V::B(x != 0.0),
        // Rust's `as f32` on an i64 rounds once, to nearest even, as C does.
        (V::I(x), Dt::F32) => V::F(x as f32 as f64),
        (V::I(x), Dt::F64) => V::F(x as f64),
        (V::I(x), Dt::I64 | Dt::I32) => fix(to, V::I(x)),
        (V::I(x), Dt::Bool) => V::B(x != 0),
        (V::B(b), Dt::Bool) => V::B(b),
        (V::B(b), d) if d.is_float() => V::F(b as u8 as f64),
        (V::B(b), _) => V::I(b as i64),
    }
}

// ----- indexing (the CreateView encoding) ------------------------------------

/// numpy's omitted slice bounds, spelled as far-away integers.
pub const LO: i64 = i64::MIN / 2;
pub const HI: i64 = i64::MAX / 2;

/// One index of the CreateView encoding.
#[derive(Clone, Copy, Debug)]
pub enum Ix {
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
}

impl Ix {
    pub fn encode(self) -> Vec<i64> {
        match self {
            Ix::P(p) => vec![0, 1, 1, p, 1],
            Ix::R(a, b, st) => vec![1, 2, 1, a, b, st, 0],
            Ix::Ri(a, b, st) => vec![1, 2, 1, a, b, st, 1],
            Ix::All => vec![2, 0, 1, 1],
            Ix::New => vec![3, 1, 10, 1],
        }
    }

    fn decode(v: &[i64]) -> Ix {
        match v {
            [0, 1, 1, p, 1] => Ix::P(*p),
            [1, 2, 1, a, b, st, 0] => Ix::R(*a, *b, *st),
            [1, 2, 1, a, b, st, 1] => Ix::Ri(*a, *b, *st),
            [2, 0, 1, 1] => Ix::All,
            [3, 1, 10, 1] | [3, 1, 1, 0, 1] => Ix::New,
            _ => panic!("reference: index vector {v:?}"),
        }
    }
}

/// The positions an interval picks on an axis of length `d`: a negative
/// bound counts from the end, then walk from the start in steps of `stride`
/// while on the axis and before the end (or at it, when inclusive).
pub fn interval_picks(d: usize, start: i64, end: i64, stride: i64, inclusive: bool) -> Vec<usize> {
    assert!(stride != 0);
    let d = d as i64;
    let from_end = |v: i64| if v < 0 { v + d } else { v };
    let mut i = from_end(start);
    let stop = from_end(end);
    // numpy moves a start that lies beyond the axis onto its nearest end.
    if stride > 0 && i < 0 {
        i = 0;
    }
    if stride < 0 && i >= d {
        i = d - 1;
    }
    let mut picks = Vec::new();
    loop {
        let before_end = match (stride > 0, inclusive) {
            (true, false) => i < stop,
            (true, true) => i <= stop,
            (false, false) => i > stop,
            (false, true) => i >= stop,
        };
        if !(0..d).contains(&i) || !before_end {
            break;
        }
        picks.push(i as usize);
        match i.checked_add(stride) {
            Some(n) => i = n,
            None => break,
        }
    }
    picks
}

/// `x[ix]` with numpy's basic indexing: the result shape and, for each
/// result element in C order, its flat position in `x`.
fn index_plan(shape: &[usize], ix: &[Ix]) -> (Vec<usize>, Vec<usize>) {
    enum Out {
        Src { axis: usize, picks: Vec<usize> },
        New,
    }
    let mut fixed = vec![0usize; shape.len()];
    let mut outs = Vec::new();
    let mut axis = 0;
    for &i in ix {
        match i {
            Ix::New => outs.push(Out::New),
            Ix::All => {
                outs.push(Out::Src {
                    axis,
                    picks: (0..shape[axis]).collect(),
                });
                axis += 1;
            }
            Ix::P(p) => {
                let d = shape[axis] as i64;
                let q = if p < 0 { p + d } else { p };
                assert!(
                    (0..d).contains(&q),
                    "reference: point {p} outside axis {axis} of {d}"
                );
                fixed[axis] = q as usize;
                axis += 1;
            }
            Ix::R(a, b, st) | Ix::Ri(a, b, st) => {
                let picks = interval_picks(shape[axis], a, b, st, matches!(i, Ix::Ri(..)));
                outs.push(Out::Src { axis, picks });
                axis += 1;
            }
        }
    }
    for (ax, &d) in shape.iter().enumerate().skip(axis) {
        outs.push(Out::Src {
            axis: ax,
            picks: (0..d).collect(),
        });
    }
    let oshape: Vec<usize> = outs
        .iter()
        .map(|o| match o {
            Out::Src { picks, .. } => picks.len(),
            Out::New => 1,
        })
        .collect();
    let pos = indices(&oshape)
        .iter()
        .map(|oix| {
            let mut src = fixed.clone();
            for (o, &k) in outs.iter().zip(oix) {
                if let Out::Src { axis, picks } = o {
                    src[*axis] = picks[k];
                }
            }
            flat(shape, &src)
        })
        .collect();
    (oshape, pos)
}

fn index_ref(x: &A, ix: &[Ix]) -> A {
    let (shape, pos) = index_plan(&x.shape, ix);
    A {
        dt: x.dt,
        shape,
        v: pos.iter().map(|&p| x.v[p]).collect(),
    }
}

fn decode_all(idx: &[&A]) -> Vec<Ix> {
    idx.iter()
        .map(|t| {
            assert_eq!(t.dt, Dt::I64);
            Ix::decode(&t.v.iter().map(|&x| iv(x)).collect::<Vec<_>>())
        })
        .collect()
}

// ----- reductions, linear algebra, nn ----------------------------------------

/// The flat positions of each lane along `ax`, lanes in the C order of the
/// remaining axes.
fn lanes(shape: &[usize], ax: usize) -> Vec<Vec<usize>> {
    let mut rest = shape.to_vec();
    rest.remove(ax);
    indices(&rest)
        .iter()
        .map(|r| {
            (0..shape[ax])
                .map(|k| {
                    let mut ix = r.clone();
                    ix.insert(ax, k);
                    flat(shape, &ix)
                })
                .collect()
        })
        .collect()
}

/// Groups the elements of `x` by reduced position; returns the output shape
/// and, per output element, the reduced values in C order.
fn groups(x: &A, axes: Option<&[i64]>, keepdims: bool) -> (Vec<usize>, Vec<Vec<V>>) {
    let n = x.shape.len();
    let mut red = vec![axes.is_none(); n];
    for &a in axes.unwrap_or(&[]) {
        let r = resolve_axis(a, n);
        assert!(!red[r], "reference: repeated axis");
        red[r] = true;
    }
    let kept: Vec<usize> = (0..n).filter(|&d| !red[d]).map(|d| x.shape[d]).collect();
    let mut g = vec![Vec::new(); numel(&kept)];
    for (ix, &v) in indices(&x.shape).iter().zip(&x.v) {
        let k: Vec<usize> = (0..n).filter(|&d| !red[d]).map(|d| ix[d]).collect();
        g[flat(&kept, &k)].push(v);
    }
    let shape = if keepdims {
        (0..n).map(|d| if red[d] { 1 } else { x.shape[d] }).collect()
    } else {
        kept
    };
    (shape, g)
}

fn reduce(kind: &str, x: &A, axes: Option<&[i64]>, keepdims: bool) -> A {
    let (shape, g) = groups(x, axes, keepdims);
    let v = g
        .iter()
        .map(|vals| {
            let r = match (kind, x.dt.is_float()) {
                ("sum", true) => V::F(vals.iter().map(|&v| fv(v)).sum()),
                ("sum", false) => V::I(vals.iter().fold(0i64, |a, &v| a.wrapping_add(iv(v)))),
                ("prod", true) => V::F(vals.iter().map(|&v| fv(v)).product()),
                ("prod", false) => V::I(vals.iter().fold(1i64, |a, &v| a.wrapping_mul(iv(v)))),
                ("mean", true) => V::F(vals.iter().map(|&v| fv(v)).sum::<f64>() / vals.len() as f64),
                ("max", true) => V::F(vals.iter().fold(f64::NEG_INFINITY, |a, &v| maximum_f(a, fv(v)))),
                ("min", true) => V::F(vals.iter().fold(f64::INFINITY, |a, &v| minimum_f(a, fv(v)))),
                ("max", false) => V::I(vals.iter().map(|&v| iv(v)).max().expect("nonempty")),
                ("min", false) => V::I(vals.iter().map(|&v| iv(v)).min().expect("nonempty")),
                _ => panic!("reference: {kind} of {:?}", x.dt),
            };
            fix(x.dt, r)
        })
        .collect();
    A { dt: x.dt, shape, v }
}

/// Index of the first NaN, else of the first maximum.
fn argmax_of(vals: &[V]) -> i64 {
    let mut best = 0;
    for (i, &v) in vals.iter().enumerate() {
        match (v, vals[best]) {
            (V::F(x), _) if x.is_nan() => return i as i64,
            (V::F(x), V::F(b)) if x > b => best = i,
            (V::I(x), V::I(b)) if x > b => best = i,
            _ => {}
        }
    }
    best as i64
}

fn argmax(x: &A, axis: Option<i64>, keepdims: bool) -> A {
    match axis {
        None => {
            let shape = if keepdims { vec![1; x.shape.len()] } else { vec![] };
            A::ints(Dt::I64, &shape, &[argmax_of(&x.v)])
        }
        Some(a) => {
            let ax = resolve_axis(a, x.shape.len());
            let vals: Vec<i64> = lanes(&x.shape, ax)
                .iter()
                .map(|l| argmax_of(&l.iter().map(|&p| x.v[p]).collect::<Vec<_>>()))
                .collect();
            let mut shape = x.shape.clone();
            if keepdims {
                shape[ax] = 1;
            } else {
                shape.remove(ax);
            }
            A::ints(Dt::I64, &shape, &vals)
        }
    }
}

fn matmul(a: &A, b: &A) -> A {
    assert_eq!(a.dt, b.dt);
    let sa = if a.shape.len() == 1 {
        vec![1, a.shape[0]]
    } else {
        a.shape.clone()
    };
    let sb = if b.shape.len() == 1 {
        vec![b.shape[0], 1]
    } else {
        b.shape.clone()
    };
    let (ra, rb) = (sa.len(), sb.len());
    let (n, k, m) = (sa[ra - 2], sa[ra - 1], sb[rb - 1]);
    assert_eq!(k, sb[rb - 2], "reference: matmul {:?} {:?}", a.shape, b.shape);
    let batch = bshape(&sa[..ra - 2], &sb[..rb - 2]);
    let a2 = A {
        shape: sa.clone(),
        ..a.clone()
    };
    let b2 = A {
        shape: sb.clone(),
        ..b.clone()
    };
    let full: Vec<usize> = batch.iter().copied().chain([n, m]).collect();
    let r = A::build(a.dt, full, |ix| {
        let nb = batch.len();
        let (bi, i, j) = (&ix[..nb], ix[nb], ix[nb + 1]);
        let at = |t: &A, r: usize, c: usize| {
            let lead = nb - (t.shape.len() - 2);
            let mut src: Vec<usize> = bi[lead..]
                .iter()
                .zip(&t.shape)
                .map(|(&x, &d)| if d == 1 { 0 } else { x })
                .collect();
            src.extend([r, c]);
            t.get(&src)
        };
        if a.dt.is_float() {
            V::F((0..k).map(|p| fv(at(&a2, i, p)) * fv(at(&b2, p, j))).sum())
        } else {
            V::I((0..k).fold(0i64, |s, p| {
                s.wrapping_add(iv(at(&a2, i, p)).wrapping_mul(iv(at(&b2, p, j))))
            }))
        }
    });
    let mut shape = batch.clone();
    if a.shape.len() > 1 {
        shape.push(n);
    }
    if b.shape.len() > 1 {
        shape.push(m);
    }
    A { shape, ..r }
}

fn softmax(x: &A, axis: i64, log: bool) -> A {
    let ax = resolve_axis(axis, x.shape.len());
    let mut out = x.v.clone();
    for lane in lanes(&x.shape, ax) {
        let vals: Vec<f64> = lane.iter().map(|&p| fv(x.v[p])).collect();
        let m = vals.iter().fold(f64::NEG_INFINITY, |a, &v| maximum_f(a, v));
        let s: f64 = vals.iter().map(|&v| (v - m).exp()).sum();
        for (&p, &v) in lane.iter().zip(&vals) {
            out[p] = fix(x.dt, V::F(if log { v - m - s.ln() } else { (v - m).exp() / s }));
        }
    }
    A { v: out, ..x.clone() }
}

fn cross_entropy(l: &A, y: &A) -> A {
    let (n, c) = (l.shape[0], l.shape[1]);
    let ls = softmax(
        &A {
            dt: Dt::F64,
            ..l.clone()
        },
        -1,
        true,
    );
    let total: f64 = (0..n)
        .map(|i| {
            let lab = iv(y.v[i]);
            assert!((0..c as i64).contains(&lab));
            -fv(ls.v[i * c + lab as usize])
        })
        .sum();
    A::build(l.dt, vec![], |_| V::F(total / n as f64))
}

fn mse(a: &A, b: &A) -> A {
    let d = zip2(a, b, Dt::F64, |x, y| V::F(fv(x) - fv(y)));
    let s: f64 = d.v.iter().map(|&x| fv(x) * fv(x)).sum();
    A::build(a.dt, vec![], |_| V::F(s / d.v.len() as f64))
}

// ----- copies and writes -------------------------------------------------------

fn gather(x: &A, ind: &A, axis: i64) -> A {
    let ax = resolve_axis(axis, x.shape.len());
    let n = x.shape[ax] as i64;
    let shape: Vec<usize> = x.shape[..ax]
        .iter()
        .chain(&ind.shape)
        .chain(&x.shape[ax + 1..])
        .copied()
        .collect();
    let ni = ind.shape.len();
    A::build(x.dt, shape, |ix| {
        let i = iv(ind.get(&ix[ax..ax + ni]));
        let j = if i < 0 { i + n } else { i };
        assert!((0..n).contains(&j), "reference: gather index {i}");
        let src: Vec<usize> = ix[..ax]
            .iter()
            .copied()
            .chain([j as usize])
            .chain(ix[ax + ni..].iter().copied())
            .collect();
        x.get(&src)
    })
}

fn concat(xs: &[&A], axis: i64) -> A {
    let ax = resolve_axis(axis, xs[0].shape.len());
    let mut shape = xs[0].shape.clone();
    shape[ax] = xs.iter().map(|x| x.shape[ax]).sum();
    A::build(xs[0].dt, shape, |ix| {
        let mut k = ix[ax];
        for x in xs {
            if k < x.shape[ax] {
                let mut src = ix.to_vec();
                src[ax] = k;
                return x.get(&src);
            }
            k -= x.shape[ax];
        }
        unreachable!()
    })
}

fn stack(xs: &[&A], axis: i64) -> A {
    let ax = resolve_axis(axis, xs[0].shape.len() + 1);
    let mut shape = xs[0].shape.clone();
    shape.insert(ax, xs.len());
    A::build(xs[0].dt, shape, |ix| {
        let mut src = ix.to_vec();
        let k = src.remove(ax);
        xs[k].get(&src)
    })
}

/// numpy's `x[idx] = value` (set) or `x[idx] += value` (inc) on a copy.
fn subtensor(inc: bool, x: &A, value: &A, ix: &[Ix]) -> A {
    let (rshape, pos) = index_plan(&x.shape, ix);
    let mut value = value.clone();
    if !inc {
        while value.shape.len() > rshape.len() && value.shape[0] == 1 {
            value.shape.remove(0);
        }
    }
    let value = bcast_to(&value, &rshape);
    let mut out = x.clone();
    for (&p, &v) in pos.iter().zip(&value.v) {
        out.v[p] = if inc { binary("add", x.dt, out.v[p], v) } else { v };
    }
    out
}

fn reshape(x: &A, shape: &[i64]) -> A {
    let total = numel(&x.shape);
    let known: usize = shape.iter().filter(|&&d| d >= 0).map(|&d| d as usize).product();
    let shape: Vec<usize> = shape
        .iter()
        .map(|&d| if d < 0 { total / known } else { d as usize })
        .collect();
    assert_eq!(numel(&shape), total, "reference: reshape");
    A { shape, ..x.clone() }
}

/// `at`'s bool `key`, `default` when absent.
fn at_bool_or(at: &At, key: &str, default: bool) -> bool {
    match at_get(at, key) {
        None => default,
        Some(_) => at_bool(at, key),
    }
}

/// The multi-indices of `x` with the one of `axis` replaced.
fn with_axis(ix: &[usize], axis: usize, i: usize) -> Vec<usize> {
    let mut j = ix.to_vec();
    j[axis] = i;
    j
}

/// numpy's `arange(start, limit, delta)` from three 0-d arrays.
fn range_ref(start: &A, limit: &A, delta: &A) -> A {
    let dt = start.dt;
    let (n, at): (usize, Box<dyn Fn(usize) -> V>) = if dt.is_float() {
        let (s, l, d) = (fv(start.v[0]), fv(limit.v[0]), fv(delta.v[0]));
        (
            ((l - s) / d).ceil().max(0.0) as usize,
            Box::new(move |i| V::F(s + i as f64 * d)),
        )
    } else {
        let (s, l, d) = (iv(start.v[0]), iv(limit.v[0]), iv(delta.v[0]));
        let n = if d > 0 {
            (l - s + d - 1) / d
        } else {
            (s - l - d - 1) / -d
        };
        (n.max(0) as usize, Box::new(move |i| V::I(s + i as i64 * d)))
    };
    A::build(dt, vec![n], |ix| at(ix[0]))
}

/// numpy's `cumsum` along `axis`, optionally exclusive and from the end.
fn cumsum_ref(x: &A, axis: i64, exclusive: bool, reverse: bool) -> A {
    let ax = resolve_axis(axis, x.shape.len());
    let d = x.shape[ax];
    A::build(x.dt, x.shape.clone(), |ix| {
        let i = ix[ax];
        let take: Vec<usize> = if reverse {
            ((i + usize::from(exclusive))..d).collect()
        } else {
            (0..(i + usize::from(!exclusive))).collect()
        };
        let vals = take.iter().map(|&k| x.get(&with_axis(ix, ax, k)));
        if x.dt.is_float() {
            V::F(vals.map(fv).sum())
        } else {
            V::I(vals.map(iv).fold(0i64, i64::wrapping_add))
        }
    })
}

/// numpy's `triu(x, k)` / `tril(x, k)` over the last two axes.
fn trilu_ref(x: &A, upper: bool, k: i64) -> A {
    let r = x.shape.len();
    let zero = match x.dt {
        Dt::F32 | Dt::F64 => V::F(0.0),
        Dt::I64 | Dt::I32 => V::I(0),
        Dt::Bool => V::B(false),
    };
    A::build(x.dt, x.shape.clone(), |ix| {
        let diff = ix[r - 1] as i64 - ix[r - 2] as i64;
        let keep = if upper { diff >= k } else { diff <= k };
        if keep {
            x.get(ix)
        } else {
            zero
        }
    })
}

/// An index value of `indices` resolved against length `d` (negative counts
/// from the end).
fn index_at(v: V, d: usize) -> usize {
    let i = iv(v);
    let j = if i < 0 { i + d as i64 } else { i };
    assert!((0..d as i64).contains(&j), "reference: index {i} outside {d}");
    j as usize
}

/// numpy's `take_along_axis(x, indices, axis)`.
fn gather_elements_ref(x: &A, ind: &A, axis: i64) -> A {
    let ax = resolve_axis(axis, x.shape.len());
    A::build(x.dt, ind.shape.clone(), |ix| {
        x.get(&with_axis(ix, ax, index_at(ind.get(ix), x.shape[ax])))
    })
}

/// A copy of `x` with `updates` written (or combined, `reduction`) at
/// `indices` along `axis`, in C order of `indices`.
fn scatter_elements_ref(x: &A, ind: &A, upd: &A, axis: i64, reduction: &str) -> A {
    let ax = resolve_axis(axis, x.shape.len());
    let mut out = x.clone();
    for ix in indices(&ind.shape) {
        let at = flat(&x.shape, &with_axis(&ix, ax, index_at(ind.get(&ix), x.shape[ax])));
        let (old, u) = (out.v[at], upd.get(&ix));
        let new = match reduction {
            "none" => u,
            "add" => binary("add", x.dt, old, u),
            "mul" => binary("mul", x.dt, old, u),
            "max" => binary("maximum", x.dt, old, u),
            "min" => binary("minimum", x.dt, old, u),
            other => panic!("reference: reduction {other}"),
        };
        out.v[at] = fix(x.dt, new);
    }
    out
}

/// 1 at the first maximum (or first NaN) of each lane along `axis`.
fn hardmax_ref(x: &A, axis: i64) -> A {
    let ax = resolve_axis(axis, x.shape.len());
    A::build(x.dt, x.shape.clone(), |ix| {
        let lane: Vec<V> = (0..x.shape[ax]).map(|k| x.get(&with_axis(ix, ax, k))).collect();
        V::F(if argmax_of(&lane) == ix[ax] as i64 {
            1.0
        } else {
            0.0
        })
    })
}

/// Layer normalization over axes `axis..`: `[y, mean, inv_std]`, the
/// statistics in f64 and rounded once.
fn layer_norm_ref(x: &A, scale: Option<&A>, bias: Option<&A>, axis: i64, eps: f64) -> Vec<A> {
    let ax = resolve_axis(axis, x.shape.len());
    let inner: usize = numel(&x.shape[ax..]);
    let outer: usize = numel(&x.shape[..ax]);
    let param = |p: Option<&A>, fill: f64| -> Vec<f64> {
        match p {
            None => vec![fill; inner],
            Some(p) => {
                let b = bcast_to(p, &x.shape[ax..]);
                b.v.iter().map(|&v| fv(v)).collect()
            }
        }
    };
    let (sc, bi) = (param(scale, 1.0), param(bias, 0.0));
    let mut y = Vec::new();
    let (mut means, mut invs) = (Vec::new(), Vec::new());
    for o in 0..outer {
        let block: Vec<f64> = x.v[o * inner..(o + 1) * inner].iter().map(|&v| fv(v)).collect();
        let mean = block.iter().sum::<f64>() / inner as f64;
        let var = block.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / inner as f64;
        let inv = 1.0 / (var + eps).sqrt();
        y.extend(
            block
                .iter()
                .enumerate()
                .map(|(k, v)| (v - mean) * inv * sc[k] + bi[k]),
        );
        means.push(mean);
        invs.push(inv);
    }
    let stat_shape: Vec<usize> = (0..x.shape.len())
        .map(|d| if d < ax { x.shape[d] } else { 1 })
        .collect();
    let round = |shape: &[usize], v: Vec<f64>| A::build(x.dt, shape.to_vec(), |ix| V::F(v[flat(shape, ix)]));
    vec![
        round(&x.shape, y),
        round(&stat_shape, means),
        round(&stat_shape, invs),
    ]
}

/// numpy's `einsum` for an explicit equation of letter labels (no `...`):
/// every combination of label values, summed over the labels the output
/// leaves out.
fn einsum_ref(eq: &str, xs: &[&A]) -> A {
    let eq: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = eq.split_once("->").expect("reference: explicit einsum equation");
    let terms: Vec<Vec<char>> = lhs.split(',').map(|t| t.chars().collect()).collect();
    let out: Vec<char> = rhs.chars().collect();
    let mut labels: Vec<char> = Vec::new();
    let mut size = BTreeMap::new();
    for (t, x) in terms.iter().zip(xs) {
        for (&l, &d) in t.iter().zip(&x.shape) {
            assert_eq!(*size.entry(l).or_insert(d), d, "reference: label {l}");
            if !labels.contains(&l) {
                labels.push(l);
            }
        }
    }
    let dims: Vec<usize> = labels.iter().map(|l| size[l]).collect();
    let oshape: Vec<usize> = out.iter().map(|l| size[l]).collect();
    let dt = xs[0].dt;
    let mut acc = vec![if dt.is_float() { V::F(0.0) } else { V::I(0) }; numel(&oshape)];
    for combo in indices(&dims) {
        let val = |l: char| combo[labels.iter().position(|&m| m == l).expect("label")];
        let mut p = if dt.is_float() { V::F(1.0) } else { V::I(1) };
        for (t, x) in terms.iter().zip(xs) {
            let ix: Vec<usize> = t.iter().map(|&l| val(l)).collect();
            p = match (p, x.get(&ix)) {
                (V::F(a), V::F(b)) => V::F(a * b),
                (V::I(a), V::I(b)) => V::I(a.wrapping_mul(b)),
                other => panic!("reference: einsum of {other:?}"),
            };
        }
        let o = flat(&oshape, &out.iter().map(|&l| val(l)).collect::<Vec<_>>());
        acc[o] = match (acc[o], p) {
            (V::F(a), V::F(b)) => V::F(a + b),
            (V::I(a), V::I(b)) => V::I(a.wrapping_add(b)),
            other => panic!("reference: einsum of {other:?}"),
        };
    }
    A::build(dt, oshape.clone(), |ix| acc[flat(&oshape, ix)])
}

/// The reference for one node: `op` applied to `ins` with `at`.
pub fn eval(op: &str, ins: &[&A], at: &At) -> A {
    let base = op.strip_suffix("_inplace").unwrap_or(op);
    let inplace = base != op;
    match base {
        "add" | "sub" | "mul" | "div" | "pow" | "maximum" | "minimum" => {
            let (a, b) = (ins[0], ins[1]);
            assert_eq!(a.dt, b.dt);
            assert_ne!(a.dt, Dt::Bool);
            let out = if base == "div" && !a.dt.is_float() {
                Dt::F64
            } else {
                a.dt
            };
            let r = zip2(a, b, out, |x, y| binary(base, a.dt, x, y));
            if inplace {
                assert_eq!(r.shape, a.shape, "reference: {op} must not grow input 0");
            }
            r
        }
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" => {
            assert_eq!(ins[0].dt, ins[1].dt);
            zip2(ins[0], ins[1], Dt::Bool, |x, y| V::B(compare(base, x, y)))
        }
        "where" => {
            let (c, a, b) = (ins[0], ins[1], ins[2]);
            assert_eq!(c.dt, Dt::Bool);
            let shape = bshape(&bshape(&c.shape, &a.shape), &b.shape);
            A::build(a.dt, shape, |ix| {
                if bv(bget(c, ix)) {
                    bget(a, ix)
                } else {
                    bget(b, ix)
                }
            })
        }
        "neg" | "abs" | "relu" | "exp" | "log" | "sqrt" | "tanh" | "sigmoid" => {
            ins[0].map(ins[0].dt, |x| unary(base, ins[0].dt, x))
        }
        "cast" => {
            let to = at_dtype(at, "dtype").expect("cast dtype");
            ins[0].map(to, |x| cast(x, to))
        }
        "sum" | "mean" | "max" | "min" | "prod" => reduce(
            base,
            ins[0],
            at_list(at, "axes").as_deref(),
            at_bool(at, "keepdims"),
        ),
        "argmax" => argmax(ins[0], at_i64(at, "axis"), at_bool(at, "keepdims")),
        "matmul" => matmul(ins[0], ins[1]),
        "softmax" | "log_softmax" => softmax(ins[0], at_i64(at, "axis").unwrap_or(-1), base == "log_softmax"),
        "cross_entropy" => cross_entropy(ins[0], ins[1]),
        "mse" => mse(ins[0], ins[1]),
        "transpose" => {
            let n = ins[0].shape.len();
            let perm: Vec<usize> = match at_list(at, "perm") {
                Some(p) => p.iter().map(|&x| x as usize).collect(),
                None => (0..n).rev().collect(),
            };
            transpose_ref(ins[0], &perm)
        }
        "reshape" => reshape(ins[0], &at_list(at, "shape").expect("shape")),
        "expand_dims" => {
            let x = ins[0];
            let ax = resolve_axis(at_i64(at, "axis").expect("axis"), x.shape.len() + 1);
            let mut shape = x.shape.clone();
            shape.insert(ax, 1);
            A { shape, ..x.clone() }
        }
        "squeeze" => {
            let x = ins[0];
            let n = x.shape.len();
            let drop: Vec<usize> = match at_list(at, "axes") {
                Some(a) => a.iter().map(|&d| resolve_axis(d, n)).collect(),
                None => (0..n).filter(|&d| x.shape[d] == 1).collect(),
            };
            for &d in &drop {
                assert_eq!(x.shape[d], 1);
            }
            let shape = (0..n).filter(|d| !drop.contains(d)).map(|d| x.shape[d]).collect();
            A { shape, ..x.clone() }
        }
        "broadcast_to" => {
            let shape: Vec<usize> = at_list(at, "shape")
                .expect("shape")
                .iter()
                .map(|&d| d as usize)
                .collect();
            bcast_to(ins[0], &shape)
        }
        "create_view" | "strided_slice" => index_ref(ins[0], &decode_all(&ins[1..])),
        "gather" => gather(ins[0], ins[1], at_i64(at, "axis").unwrap_or(0)),
        "concat" => concat(ins, at_i64(at, "axis").unwrap_or(0)),
        "stack" => stack(ins, at_i64(at, "axis").unwrap_or(0)),
        "copy" => ins[0].clone(),
        "isnan" => ins[0].map(Dt::Bool, |v| V::B(matches!(v, V::F(x) if x.is_nan()))),
        "isinf" => {
            let (pos, neg) = (
                at_bool_or(at, "detect_positive", true),
                at_bool_or(at, "detect_negative", true),
            );
            ins[0].map(Dt::Bool, |v| {
                V::B(matches!(v, V::F(x) if (pos && x == f64::INFINITY) || (neg && x == f64::NEG_INFINITY)))
            })
        }
        "range" => range_ref(ins[0], ins[1], ins[2]),
        "cumsum" => cumsum_ref(
            ins[0],
            at_i64(at, "axis").unwrap_or(0),
            at_bool(at, "exclusive"),
            at_bool(at, "reverse"),
        ),
        "trilu" => trilu_ref(
            ins[0],
            at_bool_or(at, "upper", true),
            at_i64(at, "k").unwrap_or(0),
        ),
        "gather_elements" => gather_elements_ref(ins[0], ins[1], at_i64(at, "axis").unwrap_or(0)),
        "scatter_elements" => {
            let red = match at_get(at, "reduction") {
                Some(J::Str(r)) => r.clone(),
                _ => "none".to_string(),
            };
            scatter_elements_ref(ins[0], ins[1], ins[2], at_i64(at, "axis").unwrap_or(0), &red)
        }
        "hardmax" => hardmax_ref(ins[0], at_i64(at, "axis").unwrap_or(-1)),
        "einsum" => match at_get(at, "equation") {
            Some(J::Str(eq)) => einsum_ref(eq, ins),
            other => panic!("reference: einsum equation {other:?}"),
        },
        "set_subtensor" | "inc_subtensor" => {
            assert_eq!(ins[0].dt, ins[1].dt);
            subtensor(base == "inc_subtensor", ins[0], ins[1], &decode_all(&ins[2..]))
        }
        _ => panic!("reference: no op '{op}'"),
    }
}

/// Random ops: no reference value.
fn is_random(op: &str) -> bool {
    matches!(op, "random_uniform" | "random_normal" | "dropout")
}

// ----- deterministic data ------------------------------------------------------

/// splitmix64, seeded from a string.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: &str) -> Rng {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in seed.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        Rng(h)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// An integer in `[lo, hi]`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as i64
    }

    /// A multiple of `step` in `[lo, hi]`.
    pub fn step(&mut self, lo: f64, hi: f64, step: f64) -> f64 {
        let k = self.int((lo / step).ceil() as i64, (hi / step).floor() as i64);
        k as f64 * step
    }

    pub fn pick(&mut self, from: &[f64]) -> f64 {
        from[self.next_u64() as usize % from.len()]
    }
}

/// An array of `dt` whose elements are drawn by `f`.
pub fn gen(dt: Dt, shape: &[usize], mut f: impl FnMut() -> f64) -> A {
    let vals: Vec<f64> = (0..numel(shape)).map(|_| f()).collect();
    A::from_f64(dt, shape, &vals)
}

// ----- cases --------------------------------------------------------------------

/// One suite case: a graph under construction, with the reference value of
/// every variable computed as nodes are added.
pub struct Case {
    pub name: String,
    pub about: String,
    inputs: Vec<J>,
    constants: Vec<J>,
    parameters: Vec<J>,
    nodes: Vec<J>,
    outputs: Vec<String>,
    input_files: Vec<(String, A)>,
    expected: Vec<(String, A)>,
    /// Reference values; `None` for random values.
    env: BTreeMap<String, Option<A>>,
    n_nodes: usize,
}

impl Case {
    pub fn new(name: impl Into<String>, about: impl Into<String>) -> Case {
        Case {
            name: name.into(),
            about: about.into(),
            inputs: Vec::new(),
            constants: Vec::new(),
            parameters: Vec::new(),
            nodes: Vec::new(),
            outputs: Vec::new(),
            input_files: Vec::new(),
            expected: Vec::new(),
            env: BTreeMap::new(),
            n_nodes: 0,
        }
    }

    fn define(&mut self, name: &str, a: Option<A>) {
        assert!(
            self.env.insert(name.to_string(), a).is_none(),
            "{}: variable '{name}' defined twice",
            self.name
        );
    }

    fn input_decl(&mut self, name: &str, a: &A, mutable: bool) -> String {
        let shape: Vec<i64> = a.shape.iter().map(|&d| d as i64).collect();
        self.input_decl_shape(name, a, mutable, &shape)
    }

    fn input_decl_shape(&mut self, name: &str, a: &A, mutable: bool, shape: &[i64]) -> String {
        assert_eq!(shape.len(), a.shape.len());
        for (&d, &n) in shape.iter().zip(&a.shape) {
            assert!(
                d == -1 || d as usize == n,
                "{}: '{name}' declared {shape:?}",
                self.name
            );
        }
        let mut kv = vec![
            ("name", s(name)),
            ("dtype", s(a.dt.name())),
            ("shape", ints(shape)),
        ];
        if mutable {
            kv.push(("mutable", J::Bool(true)));
        }
        self.inputs.push(J::Obj(kv));
        self.input_files.push((name.to_string(), a.clone()));
        self.define(name, Some(a.clone()));
        name.to_string()
    }

    /// A protected graph input fed from inputs/<name>.npy.
    pub fn input(&mut self, name: &str, a: &A) -> String {
        self.input_decl(name, a, false)
    }

    /// A graph input declared with `shape` (`-1` for dimensions known only
    /// at run time), fed with `a`.
    pub fn input_dyn(&mut self, name: &str, a: &A, shape: &[i64], mutable: bool) -> String {
        self.input_decl_shape(name, a, mutable, shape)
    }

    /// Lists the nodes in a scrambled (deterministic) order: the graph format
    /// allows any order.
    pub fn shuffle_nodes(&mut self, rng: &mut Rng) {
        for i in (1..self.nodes.len()).rev() {
            let j = rng.int(0, i as i64) as usize;
            self.nodes.swap(i, j);
        }
    }

    /// A `"mutable": true` graph input.
    pub fn input_mut(&mut self, name: &str, a: &A) -> String {
        self.input_decl(name, a, true)
    }

    fn value_decl(a: &A, name: &str) -> J {
        let shape: Vec<i64> = a.shape.iter().map(|&d| d as i64).collect();
        J::Obj(vec![
            ("name", s(name)),
            ("dtype", s(a.dt.name())),
            ("shape", ints(&shape)),
            ("data", a.json_data()),
        ])
    }

    /// An inline constant.
    pub fn konst(&mut self, name: &str, a: &A) -> String {
        self.constants.push(Case::value_decl(a, name));
        self.define(name, Some(a.clone()));
        name.to_string()
    }

    /// An inline parameter (state that in-place ops may update).
    pub fn param(&mut self, name: &str, a: &A) -> String {
        self.parameters.push(Case::value_decl(a, name));
        self.define(name, Some(a.clone()));
        name.to_string()
    }

    /// `out = op(ins...)` with attrs `at`; computes the reference value.
    pub fn op_as(&mut self, out: &str, op: &str, ins: &[&str], at: At) -> String {
        let vals: Option<Vec<&A>> = ins
            .iter()
            .map(|i| {
                self.env
                    .get(*i)
                    .unwrap_or_else(|| panic!("{}: no variable '{i}'", self.name))
                    .as_ref()
            })
            .collect();
        let value = match vals {
            Some(v) if !is_random(op) => Some(eval(op, &v, &at)),
            _ => None,
        };
        let mut kv = vec![
            ("name", s(&format!("n{}_{op}", self.n_nodes))),
            ("op", s(op)),
            ("inputs", strs(ins)),
            ("outputs", strs(&[out])),
        ];
        self.n_nodes += 1;
        if !at.is_empty() {
            kv.push(("attrs", J::Obj(at)));
        }
        self.nodes.push(J::Obj(kv));
        self.define(out, value);
        out.to_string()
    }

    /// `outs = op(ins...)` for an op with several outputs (`layer_norm`),
    /// with their reference values.
    pub fn op_outs(&mut self, outs: &[&str], op: &str, ins: &[&str], at: At) {
        let vals: Vec<&A> = ins
            .iter()
            .map(|i| self.env[*i].as_ref().expect("a deterministic input"))
            .collect();
        let values = match op {
            "layer_norm" => layer_norm_ref(
                vals[0],
                vals.get(1).copied(),
                vals.get(2).copied(),
                at_i64(&at, "axis").unwrap_or(-1),
                match at_get(&at, "epsilon") {
                    Some(J::Num(e)) => *e,
                    _ => 1e-5,
                },
            ),
            other => panic!("reference: {other} has one output"),
        };
        assert_eq!(values.len(), outs.len(), "{}: {op} outputs", self.name);
        let mut kv = vec![
            ("name", s(&format!("n{}_{op}", self.n_nodes))),
            ("op", s(op)),
            ("inputs", strs(ins)),
            ("outputs", strs(outs)),
        ];
        self.n_nodes += 1;
        if !at.is_empty() {
            kv.push(("attrs", J::Obj(at)));
        }
        self.nodes.push(J::Obj(kv));
        for (o, v) in outs.iter().zip(values) {
            self.define(o, Some(v));
        }
    }

    /// Like [`Case::op_as`] with a generated output name.
    pub fn op(&mut self, op: &str, ins: &[&str], at: At) -> String {
        let out = format!("t{}", self.n_nodes);
        self.op_as(&out, op, ins, at)
    }

    /// `out = create_view(src, idx...)` with the index vectors as constants.
    pub fn view_as(&mut self, out: &str, src: &str, ix: &[Ix]) -> String {
        let names = self.index_consts(ix);
        let mut ins = vec![src];
        ins.extend(names.iter().map(String::as_str));
        self.op_as(out, "create_view", &ins, vec![])
    }

    /// Index vectors as constants `i<k>`.
    pub fn index_consts(&mut self, ix: &[Ix]) -> Vec<String> {
        ix.iter()
            .map(|i| {
                let name = format!("i{}", self.constants.len());
                let v = i.encode();
                self.konst(&name, &A::ints(Dt::I64, &[v.len()], &v))
            })
            .collect()
    }

    /// `op(x, value, idx...)` for set/inc_subtensor and their twins.
    pub fn subtensor_as(&mut self, out: &str, op: &str, x: &str, value: &str, ix: &[Ix]) -> String {
        let names = self.index_consts(ix);
        let mut ins = vec![x, value];
        ins.extend(names.iter().map(String::as_str));
        self.op_as(out, op, &ins, vec![])
    }

    /// The variable `name` with the value `l`, made inside the graph from a
    /// contiguous input `<name>_src` through a view: `recipe` 0 transposes
    /// (the last two axes), 1 reverses the second-last axis and takes every
    /// other element of the last (`[::-2]` for rank 1).
    pub fn strided(&mut self, name: &str, l: &A, recipe: u8) -> String {
        let r = l.shape.len();
        let src_name = format!("{name}_src");
        if r == 0 {
            return self.input(name, l);
        }
        if recipe == 0 && r >= 2 {
            let mut perm: Vec<usize> = (0..r).collect();
            perm.swap(r - 1, r - 2);
            let src = transpose_ref(l, &perm);
            self.input(&src_name, &src);
            let p: Vec<i64> = perm.iter().map(|&x| x as i64).collect();
            self.op_as(name, "transpose", &[&src_name], vec![("perm", ints(&p))]);
        } else {
            let mut shape = l.shape.clone();
            shape[r - 1] *= 2;
            let ix: Vec<Ix> = if r == 1 {
                vec![Ix::R(-1, LO, -2)]
            } else {
                let mut v = vec![Ix::All; r - 2];
                v.push(Ix::R(-1, LO, -1));
                v.push(Ix::R(1, HI, 2));
                v
            };
            let junk = match l.dt {
                Dt::F32 | Dt::F64 => V::F(99.5),
                Dt::I64 | Dt::I32 => V::I(99),
                Dt::Bool => V::B(true),
            };
            let mut src = A {
                dt: l.dt,
                shape: shape.clone(),
                v: vec![junk; numel(&shape)],
            };
            let (oshape, pos) = index_plan(&shape, &ix);
            assert_eq!(oshape, l.shape);
            for (&p, &v) in pos.iter().zip(&l.v) {
                src.v[p] = v;
            }
            self.input(&src_name, &src);
            self.view_as(name, &src_name, &ix);
        }
        let got = self.value(name);
        assert!(
            got.same(l),
            "{}: strided recipe {recipe} does not give the value",
            self.name
        );
        name.to_string()
    }

    /// True when `name` is already a variable of the graph.
    pub fn has(&self, name: &str) -> bool {
        self.env.contains_key(name)
    }

    /// The reference value of a variable.
    pub fn value(&self, name: &str) -> A {
        self.env
            .get(name)
            .and_then(|v| v.clone())
            .unwrap_or_else(|| panic!("{}: no reference value for '{name}'", self.name))
    }

    /// A graph output with its expected value from the reference.
    pub fn out(&mut self, name: &str) -> &mut Self {
        let v = self.value(name);
        self.out_expect(name, v)
    }

    /// A graph output with an expected value given by the caller.
    pub fn out_expect(&mut self, name: &str, expected: A) -> &mut Self {
        assert!(self.env.contains_key(name), "{}: no variable '{name}'", self.name);
        self.outputs.push(name.to_string());
        self.expected.push((name.to_string(), expected));
        self
    }

    /// A graph output without an expected value (random values).
    pub fn out_unchecked(&mut self, name: &str) -> &mut Self {
        assert!(self.env.contains_key(name), "{}: no variable '{name}'", self.name);
        self.outputs.push(name.to_string());
        self
    }

    fn graph_json(&self) -> String {
        let mut kv = vec![("format", s("vigil-graph/1")), ("name", s(&self.name))];
        kv.push(("inputs", J::Arr(self.inputs.clone())));
        if !self.constants.is_empty() {
            kv.push(("constants", J::Arr(self.constants.clone())));
        }
        if !self.parameters.is_empty() {
            kv.push(("parameters", J::Arr(self.parameters.clone())));
        }
        kv.push(("nodes", J::Arr(self.nodes.clone())));
        kv.push(("outputs", strs(&self.outputs)));
        let mut out = String::new();
        J::Obj(kv).print(0, &mut out);
        out.push('\n');
        out
    }

    pub fn write(&self, root: &Path) {
        assert!(!self.outputs.is_empty(), "{}: no outputs", self.name);
        let dir = root.join(&self.name);
        std::fs::create_dir_all(dir.join("inputs")).expect("mkdir inputs");
        let text = self.graph_json();
        serde_json::from_str::<serde_json::Value>(&text).expect("generated JSON parses");
        std::fs::write(dir.join("graph.json"), text).expect("write graph.json");
        for (n, a) in &self.input_files {
            a.tensor()
                .write_npy(dir.join("inputs").join(format!("{n}.npy")))
                .expect("write input");
        }
        if !self.expected.is_empty() {
            std::fs::create_dir_all(dir.join("expected")).expect("mkdir expected");
        }
        for (n, a) in &self.expected {
            a.tensor()
                .write_npy(dir.join("expected").join(format!("{n}.npy")))
                .expect("write expected");
        }
    }
}

/// Writes `cases` under `root` (removing the cases of an earlier run) and a
/// README.md made of `intro` and the case list.
pub fn write_suite(root: &Path, cases: &[Case], intro: &str) {
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before, "case names must be unique");
    if root.is_dir() {
        for e in std::fs::read_dir(root).expect("list suite dir") {
            let p = e.expect("dir entry").path();
            if p.is_dir() && p.join("graph.json").is_file() {
                std::fs::remove_dir_all(&p).expect("remove old case");
            }
        }
    }
    std::fs::create_dir_all(root).expect("create suite dir");
    for c in cases {
        c.write(root);
    }
    let mut readme = intro.to_string();
    for c in cases {
        readme.push_str(&format!("- `{}`: {}\n", c.name, c.about));
    }
    std::fs::write(root.join("README.md"), readme).expect("write README.md");
    println!("wrote {} cases to {}", cases.len(), root.display());
}

/// Shorthand for attrs.
pub fn at1(k: &'static str, v: J) -> At {
    vec![(k, v)]
}

// ----- the catalogue -------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Lay {
    Contig,
    Strided,
    Bcast,
}

const LAYOUTS: [Lay; 3] = [Lay::Contig, Lay::Strided, Lay::Bcast];

impl Lay {
    fn name(self) -> &'static str {
        match self {
            Lay::Contig => "contiguous",
            Lay::Strided => "strided",
            Lay::Bcast => "broadcast",
        }
    }
}

/// Operand values for binary op `op`: moderate, exact in f32, no zero
/// divisors, no integer overflow; maximum/minimum draw from a small set so
/// that ties occur.
fn operand(op: &str, dt: Dt, which: u8, shape: &[usize], rng: &mut Rng) -> A {
    let f = dt.is_float();
    let small = [-2.5, -1.0, -0.5, 0.5, 1.0, 1.5, 3.0];
    let smalli = [-7.0, -2.0, -1.0, 0.0, 1.0, 3.0, 5.0];
    let mut draw = || -> f64 {
        match (op, which, f) {
            ("pow", 0, true) => rng.step(0.25, 3.0, 0.25),
            ("pow", 1, true) => rng.step(-2.0, 2.0, 0.5),
            ("pow", 0, false) => rng.int(-4, 4) as f64,
            ("pow", 1, false) => rng.int(0, 5) as f64,
            ("div", 1, true) => loop {
                let x = rng.step(-4.0, 4.0, 0.25);
                if x != 0.0 {
                    break x;
                }
            },
            ("div", 1, false) => loop {
                let x = rng.int(-9, 9) as f64;
                if x != 0.0 {
                    break x;
                }
            },
            ("maximum" | "minimum", _, true) => rng.pick(&small),
            ("maximum" | "minimum", _, false) => rng.pick(&smalli),
            (_, _, true) => loop {
                let x = rng.step(-4.0, 4.0, 0.25);
                if x != 0.0 {
                    break x;
                }
            },
            (_, _, false) => {
                if dt == Dt::I32 {
                    rng.int(-1000, 1000) as f64
                } else {
                    rng.int(-50, 50) as f64
                }
            }
        }
    };
    gen(dt, shape, &mut draw)
}

/// `op(a, b)` cases: contiguous [3, 4]; strided (a transposed, b reversed
/// with step 2); broadcast ([3,1] with [1,4], [3,1] with [4], and
/// `broadcast_to([4] -> [3, 4])` with [3, 1]).
fn binary_case(op: &str, dt: Dt, lay: Lay, gen_op: &str) -> Case {
    let name = format!("{op}_{}_{}", dt.name(), lay.name());
    let mut rng = Rng::new(&name);
    let mut c;
    match lay {
        Lay::Contig => {
            c = Case::new(&name, format!("{op}(a, b) on {} [3, 4], contiguous", dt.name()));
            let a = operand(gen_op, dt, 0, &[3, 4], &mut rng);
            let b = operand(gen_op, dt, 1, &[3, 4], &mut rng);
            c.input("a", &a);
            c.input("b", &b);
            c.op_as("y", op, &["a", "b"], vec![]);
            c.out("y");
        }
        Lay::Strided => {
            c = Case::new(
                &name,
                format!(
                    "{op}(a, b) on {} [3, 4]: a = transpose(a_src), b = b_src[::-1, 1::2]",
                    dt.name()
                ),
            );
            let a = operand(gen_op, dt, 0, &[3, 4], &mut rng);
            let b = operand(gen_op, dt, 1, &[3, 4], &mut rng);
            c.strided("a", &a, 0);
            c.strided("b", &b, 1);
            c.op_as("y", op, &["a", "b"], vec![]);
            c.out("y");
        }
        Lay::Bcast => {
            c = Case::new(
                &name,
                format!(
                    "{op} on {}: [3,1] with [1,4]; [3,1] with [4]; broadcast_to([4] -> [3,4]) with [3,1]",
                    dt.name()
                ),
            );
            let a = operand(gen_op, dt, 0, &[3, 1], &mut rng);
            let b = operand(gen_op, dt, 1, &[1, 4], &mut rng);
            let v = operand(gen_op, dt, 1, &[4], &mut rng);
            let w = operand(gen_op, dt, 0, &[4], &mut rng);
            let a2 = operand(gen_op, dt, 1, &[3, 1], &mut rng);
            c.input("a", &a);
            c.input("b", &b);
            c.input("v", &v);
            c.input("w", &w);
            c.input("a2", &a2);
            c.op_as("y", op, &["a", "b"], vec![]);
            c.op_as("z", op, &["a", "v"], vec![]);
            c.op_as("wb", "broadcast_to", &["w"], at1("shape", ints(&[3, 4])));
            c.op_as("u", op, &["wb", "a2"], vec![]);
            c.out("y").out("z").out("u");
        }
    }
    c
}

fn binary_cases(v: &mut Vec<Case>) {
    for op in ["add", "sub", "mul", "div", "pow", "maximum", "minimum"] {
        for dt in NUMERIC {
            for lay in LAYOUTS {
                v.push(binary_case(op, dt, lay, op));
            }
        }
    }
    // Deliberate integer wrapping, as numpy's arrays do.
    {
        let mut c = Case::new(
            "add_sub_mul_i32_wrap",
            "i32 add/sub/mul that overflow wrap (numpy's array arithmetic)",
        );
        let m = i32::MAX as i64;
        let n = i32::MIN as i64;
        c.input("a", &A::ints(Dt::I32, &[4], &[m, n, m, 65536]));
        c.input("b", &A::ints(Dt::I32, &[4], &[1, 1, m, 65536]));
        c.op_as("s", "add", &["a", "b"], vec![]);
        c.op_as("d", "sub", &["a", "b"], vec![]);
        c.op_as("p", "mul", &["a", "b"], vec![]);
        c.out("s").out("d").out("p");
        v.push(c);
    }
    {
        let mut c = Case::new("mul_pow_i64_wrap", "i64 mul and pow that overflow wrap");
        let m = i64::MAX;
        c.input("a", &A::ints(Dt::I64, &[3], &[m, 1 << 32, 3]));
        c.input("b", &A::ints(Dt::I64, &[3], &[2, 1 << 32, 41]));
        c.op_as("p", "mul", &["a", "b"], vec![]);
        c.input("e", &A::ints(Dt::I64, &[3], &[2, 2, 41]));
        c.op_as("q", "pow", &["a", "e"], vec![]);
        c.out("p").out("q");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "pow_i64_negative_exponent",
            "integer pow with negative exponents: 0, or +-1 for bases +-1 (docs/ops.md)",
        );
        c.input("a", &A::ints(Dt::I64, &[6], &[2, 1, -1, -1, 5, -3]));
        c.input("b", &A::ints(Dt::I64, &[6], &[-1, -4, -3, -2, -2, 0]));
        c.op_as("y", "pow", &["a", "b"], vec![]);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "pow_f64_special_values",
            "pow with negative bases and integer exponents, 0**0, x**0.5, inf**-1, inf**2, NaN**0 = 1, 1**NaN = 1 (C pow, as numpy)",
        );
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        c.input(
            "a",
            &A::from_f64(Dt::F64, &[9], &[-2.0, -1.5, 0.0, 2.25, -3.0, inf, inf, nan, 1.0]),
        );
        c.input(
            "b",
            &A::from_f64(Dt::F64, &[9], &[3.0, 2.0, 0.0, 0.5, -2.0, -1.0, 2.0, 0.0, nan]),
        );
        c.op_as("y", "pow", &["a", "b"], vec![]);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "div_f32_special_values",
            "float division with special values: x/0 = +-inf, 0/0 = NaN, inf/2, NaN/1 (the inputs hold inf and NaN, so the numerics listener does not blame the op)",
        );
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        c.input("a", &A::from_f64(Dt::F32, &[6], &[1.0, -2.0, 0.0, 3.5, inf, nan]));
        c.input("b", &A::from_f64(Dt::F32, &[6], &[0.0, 0.0, 0.0, 0.5, 2.0, 1.0]));
        c.op_as("y", "div", &["a", "b"], vec![]);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "maximum_minimum_f64_nan",
            "maximum/minimum propagate NaN from either operand (signed-zero ties are left out: numpy's answer depends on its version and SIMD path)",
        );
        let nan = f64::NAN;
        c.input("a", &A::from_f64(Dt::F64, &[5], &[nan, 1.0, nan, -3.5, 2.0]));
        c.input("b", &A::from_f64(Dt::F64, &[5], &[1.0, nan, nan, -3.5, -2.0]));
        c.op_as("mx", "maximum", &["a", "b"], vec![]);
        c.op_as("mn", "minimum", &["a", "b"], vec![]);
        c.out("mx").out("mn");
        v.push(c);
    }
}

/// Values with ties for comparisons.
fn cmp_operand(dt: Dt, shape: &[usize], rng: &mut Rng) -> A {
    match dt {
        Dt::Bool => gen(dt, shape, || rng.int(0, 1) as f64),
        d if d.is_float() => gen(dt, shape, || rng.pick(&[-1.5, -0.5, 0.0, 0.5, 2.0])),
        _ => gen(dt, shape, || rng.int(-2, 2) as f64),
    }
}

const CMPS: [&str; 6] = ["eq", "ne", "lt", "le", "gt", "ge"];

fn compare_cases(v: &mut Vec<Case>) {
    for dt in DTYPES {
        for lay in LAYOUTS {
            let name = format!("compare_{}_{}", dt.name(), lay.name());
            let mut rng = Rng::new(&name);
            let mut c = Case::new(
                &name,
                format!(
                    "eq ne lt le gt ge on {} ({}), values with ties",
                    dt.name(),
                    match lay {
                        Lay::Contig => "[3, 4] contiguous",
                        Lay::Strided => "a transposed, b reversed step 2",
                        Lay::Bcast => "[3, 1] with broadcast_to([4] -> [3, 4])",
                    }
                ),
            );
            let (a, b) = match lay {
                Lay::Contig => {
                    let a = cmp_operand(dt, &[3, 4], &mut rng);
                    let b = cmp_operand(dt, &[3, 4], &mut rng);
                    (c.input("a", &a), c.input("b", &b))
                }
                Lay::Strided => {
                    let a = cmp_operand(dt, &[3, 4], &mut rng);
                    let b = cmp_operand(dt, &[3, 4], &mut rng);
                    (c.strided("a", &a, 0), c.strided("b", &b, 1))
                }
                Lay::Bcast => {
                    let a = cmp_operand(dt, &[3, 1], &mut rng);
                    let b = cmp_operand(dt, &[4], &mut rng);
                    c.input("a", &a);
                    c.input("b0", &b);
                    (
                        "a".to_string(),
                        c.op_as("b", "broadcast_to", &["b0"], at1("shape", ints(&[3, 4]))),
                    )
                }
            };
            for op in CMPS {
                c.op_as(op, op, &[&a, &b], vec![]);
                c.out(op);
            }
            v.push(c);
        }
    }
    let mut c = Case::new("compare_f64_nan", "comparisons with NaN: only ne is true");
    let nan = f64::NAN;
    c.input("a", &A::from_f64(Dt::F64, &[4], &[nan, 1.0, nan, 0.0]));
    c.input("b", &A::from_f64(Dt::F64, &[4], &[nan, nan, 1.0, -0.0]));
    for op in CMPS {
        c.op_as(op, op, &["a", "b"], vec![]);
        c.out(op);
    }
    v.push(c);
}

fn where_cases(v: &mut Vec<Case>) {
    for dt in DTYPES {
        for lay in LAYOUTS {
            if lay != Lay::Contig && !matches!(dt, Dt::F32 | Dt::I64) {
                continue;
            }
            let name = format!("where_{}_{}", dt.name(), lay.name());
            let mut rng = Rng::new(&name);
            let mut c = Case::new(&name, String::new());
            match lay {
                Lay::Contig => {
                    c.about = format!("where(cond, a, b) on {} [3, 4]", dt.name());
                    let cond = gen(Dt::Bool, &[3, 4], || rng.int(0, 1) as f64);
                    let a = cmp_operand(dt, &[3, 4], &mut rng);
                    let b = cmp_operand(dt, &[3, 4], &mut rng);
                    c.input("cond", &cond);
                    c.input("a", &a);
                    c.input("b", &b);
                    c.op_as("y", "where", &["cond", "a", "b"], vec![]);
                }
                Lay::Strided => {
                    c.about = format!(
                        "where on {}: cond transposed, a reversed step 2, b transposed",
                        dt.name()
                    );
                    let cond = gen(Dt::Bool, &[3, 4], || rng.int(0, 1) as f64);
                    let a = cmp_operand(dt, &[3, 4], &mut rng);
                    let b = cmp_operand(dt, &[3, 4], &mut rng);
                    c.strided("cond", &cond, 0);
                    c.strided("a", &a, 1);
                    c.strided("b", &b, 0);
                    c.op_as("y", "where", &["cond", "a", "b"], vec![]);
                }
                Lay::Bcast => {
                    c.about = format!(
                        "where on {}: cond [3, 1], a [4], b 0-d; and cond broadcast_to [2, 3, 4]",
                        dt.name()
                    );
                    let cond = A::bools(&[3, 1], &[true, false, true]);
                    let a = cmp_operand(dt, &[4], &mut rng);
                    let b = cmp_operand(dt, &[], &mut rng);
                    c.input("cond", &cond);
                    c.input("a", &a);
                    c.input("b", &b);
                    c.op_as("y", "where", &["cond", "a", "b"], vec![]);
                    c.op_as("cb", "broadcast_to", &["cond"], at1("shape", ints(&[2, 3, 4])));
                    c.op_as("z", "where", &["cb", "b", "a"], vec![]);
                    c.out("z");
                }
            }
            c.out("y");
            v.push(c);
        }
    }
}

/// Inputs for unary `op`, inside its domain, moderate, nonzero (so that
/// signed zeros never matter).
fn unary_operand(op: &str, dt: Dt, shape: &[usize], rng: &mut Rng) -> A {
    gen(dt, shape, || match op {
        "exp" => rng.step(-4.0, 4.0, 0.125),
        "log" => rng.step(0.125, 8.0, 0.125),
        "sqrt" => rng.step(0.0, 9.0, 0.25),
        "tanh" => rng.step(-3.0, 3.0, 0.125),
        "sigmoid" => rng.step(-6.0, 6.0, 0.25),
        _ if dt.is_float() => loop {
            let x = rng.step(-4.0, 4.0, 0.25);
            if x != 0.0 {
                break x;
            }
        },
        _ => loop {
            let x = rng.int(-60, 60) as f64;
            if x != 0.0 {
                break x;
            }
        },
    })
}

const UNARY: [&str; 8] = ["neg", "abs", "relu", "exp", "log", "sqrt", "tanh", "sigmoid"];

fn unary_dtypes(op: &str) -> &'static [Dt] {
    if matches!(op, "neg" | "abs" | "relu") {
        &NUMERIC
    } else {
        &FLOATS
    }
}

fn unary_cases(v: &mut Vec<Case>) {
    // One case per op and dtype, one output per layout.
    for op in UNARY {
        for &dt in unary_dtypes(op) {
            let name = format!("{op}_{}", dt.name());
            let mut rng = Rng::new(&name);
            let mut c = Case::new(
                &name,
                format!(
                    "{op} on {}: contiguous [3, 4] (y), x[::-1, 1::2] (y_rev_step2), transposed (y_transposed), broadcast_to([4] -> [3, 4]) (y_broadcast)",
                    dt.name()
                ),
            );
            c.input("x", &unary_operand(op, dt, &[3, 4], &mut rng));
            c.strided("r", &unary_operand(op, dt, &[3, 4], &mut rng), 1);
            c.strided("t", &unary_operand(op, dt, &[4, 3], &mut rng), 0);
            c.input("b", &unary_operand(op, dt, &[4], &mut rng));
            c.op_as("bb", "broadcast_to", &["b"], at1("shape", ints(&[3, 4])));
            for (out, src) in [
                ("y", "x"),
                ("y_rev_step2", "r"),
                ("y_transposed", "t"),
                ("y_broadcast", "bb"),
            ] {
                c.op_as(out, op, &[src], vec![]);
                c.out(out);
            }
            v.push(c);
        }
    }
    {
        let mut c = Case::new(
            "log_sqrt_relu_f64_special_values",
            "log(0) = -inf, log(-1) = NaN, sqrt(-1) = NaN, relu keeps NaN, exp(-inf) = 0",
        );
        let nan = f64::NAN;
        let ninf = f64::NEG_INFINITY;
        c.input(
            "x",
            &A::from_f64(Dt::F64, &[5], &[0.0, -1.0, nan, f64::INFINITY, 4.0]),
        );
        c.input("w", &A::from_f64(Dt::F64, &[4], &[nan, -2.0, 3.0, ninf]));
        c.op_as("lg", "log", &["x"], vec![]);
        c.op_as("sq", "sqrt", &["x"], vec![]);
        c.op_as("rl", "relu", &["w"], vec![]);
        c.op_as("ex", "exp", &["w"], vec![]);
        c.out("lg").out("sq").out("rl").out("ex");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "abs_neg_i32_min_wrap",
            "abs and neg of i32::MIN wrap to i32::MIN, as numpy's int32",
        );
        c.input(
            "x",
            &A::ints(Dt::I32, &[3], &[i32::MIN as i64, -5, i32::MAX as i64]),
        );
        c.op_as("a", "abs", &["x"], vec![]);
        c.op_as("n", "neg", &["x"], vec![]);
        c.out("a").out("n");
        v.push(c);
    }
}

fn cast_source(dt: Dt, shape: &[usize], rng: &mut Rng) -> A {
    match dt {
        Dt::Bool => gen(dt, shape, || rng.int(0, 1) as f64),
        // Fractions truncate toward zero; zero goes to false.
        d if d.is_float() => gen(dt, shape, || {
            rng.pick(&[-7.75, -2.5, -0.25, 0.0, 0.75, 1.0, 3.5, 100.125])
        }),
        _ => gen(dt, shape, || rng.pick(&[-300.0, -1.0, 0.0, 1.0, 2.0, 12345.0])),
    }
}

fn cast_cases(v: &mut Vec<Case>) {
    for from in DTYPES {
        for lay in [Lay::Contig, Lay::Strided] {
            let name = format!("cast_from_{}_{}", from.name(), lay.name());
            let mut rng = Rng::new(&name);
            let mut c = Case::new(
                &name,
                format!(
                    "cast {} to every dtype ({})",
                    from.name(),
                    if lay == Lay::Contig {
                        "[3, 4] contiguous"
                    } else {
                        "x[::-1, 1::2]"
                    }
                ),
            );
            let x = cast_source(from, &[3, 4], &mut rng);
            if lay == Lay::Contig {
                c.input("x", &x);
            } else {
                c.strided("x", &x, 1);
            }
            for to in DTYPES {
                let out = format!("to_{}", to.name());
                c.op_as(&out, "cast", &["x"], at1("dtype", s(to.name())));
                c.out(&out);
            }
            v.push(c);
        }
    }
    {
        let mut c = Case::new(
            "cast_bool_broadcast",
            "cast(broadcast_to(bool [3, 1] -> [3, 4])) to f32 and i64",
        );
        c.input("x", &A::bools(&[3, 1], &[true, false, true]));
        c.op_as("xb", "broadcast_to", &["x"], at1("shape", ints(&[3, 4])));
        c.op_as("f", "cast", &["xb"], at1("dtype", s("f32")));
        c.op_as("i", "cast", &["xb"], at1("dtype", s("i64")));
        c.out("f").out("i");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "cast_i64_to_i32_wrap",
            "i64 values outside i32 wrap modulo 2**32, as numpy's astype(int32)",
        );
        let vals = [1i64 << 32, (1 << 32) + 5, -(1 << 31) - 1, (1 << 31), 1 << 40, -7];
        c.input("x", &A::ints(Dt::I64, &[6], &vals));
        c.op_as("y", "cast", &["x"], at1("dtype", s("i32")));
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "cast_i64_to_f32_rounding",
            "large i64 to f32 rounds once, to nearest even (2**60 + 2**36 + 1 rounds up)",
        );
        let vals = [
            (1i64 << 60) + (1 << 36) + 1,
            (1 << 24) + 1,
            (1 << 53) + 1,
            -((1 << 40) + 3),
        ];
        c.input("x", &A::ints(Dt::I64, &[4], &vals));
        c.op_as("y", "cast", &["x"], at1("dtype", s("f32")));
        c.op_as("z", "cast", &["x"], at1("dtype", s("f64")));
        c.out("y").out("z");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "cast_f64_special_values",
            "NaN and inf to bool are true, -0.0 is false; f64 to f32 rounds to nearest",
        );
        let nan = f64::NAN;
        c.input(
            "x",
            &A::from_f64(Dt::F64, &[5], &[nan, f64::INFINITY, -0.0, 0.1, 1e-50]),
        );
        c.op_as("b", "cast", &["x"], at1("dtype", s("bool")));
        c.op_as("f", "cast", &["x"], at1("dtype", s("f32")));
        c.out("b").out("f");
        v.push(c);
    }
}

/// The in-place twins, in the ops suite: on a mutable input, on an
/// intermediate value, on views.
fn inplace_twin_cases(v: &mut Vec<Case>) {
    for op in ["add", "sub", "mul", "div", "pow", "maximum", "minimum"] {
        // On a mutable input, y broadcasting into it.
        let name = format!("{op}_inplace_f32_mutable_input");
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!("{op}_inplace(x, y) with x a mutable f32 [3, 4] input and y [4]"),
        );
        let x = operand(op, Dt::F32, 0, &[3, 4], &mut rng);
        let y = operand(op, Dt::F32, 1, &[4], &mut rng);
        c.input_mut("x", &x);
        c.input("y", &y);
        let opi = format!("{op}_inplace");
        c.op_as("r", &opi, &["x", "y"], vec![]);
        c.out("r");
        v.push(c);

        // On an intermediate value.
        let dt = if op == "div" { Dt::F64 } else { Dt::I64 };
        let name = format!("{op}_inplace_{}_intermediate", dt.name());
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!(
                "t = neg(neg(x)); {op}_inplace(t, y) on {} [3, 4] with y [3, 1]",
                dt.name()
            ),
        );
        let x = operand(op, dt, 0, &[3, 4], &mut rng);
        let y = operand(op, dt, 1, &[3, 1], &mut rng);
        c.input("x", &x);
        c.input("y", &y);
        let t0 = c.op("neg", &["x"], vec![]);
        let t = c.op("neg", &[&t0], vec![]);
        c.op_as("r", &opi, &[&t, "y"], vec![]);
        c.out("r");
        v.push(c);
    }
    for op in UNARY {
        let dt = if unary_dtypes(op).len() == 4 {
            Dt::I32
        } else {
            Dt::F32
        };
        let name = format!("{op}_inplace_{}_mutable_input", dt.name());
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!("{op}_inplace(x) with x a mutable {} [3, 4] input", dt.name()),
        );
        let x = unary_operand(op, dt, &[3, 4], &mut rng);
        c.input_mut("x", &x);
        c.op_as("r", &format!("{op}_inplace"), &["x"], vec![]);
        c.out("r");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "unary_inplace_chain_f64_intermediate",
            "sigmoid_inplace(tanh_inplace(sqrt_inplace(log_inplace(exp_inplace(abs_inplace(neg_inplace(relu_inplace(t)))))))) on t = mul(x, 1)",
        );
        let mut rng = Rng::new(&c.name);
        let x = unary_operand("log", Dt::F64, &[2, 5], &mut rng);
        c.input("x", &x);
        c.konst("one", &A::scalar(Dt::F64, 1.0));
        let mut t = c.op("mul", &["x", "one"], vec![]);
        for op in ["relu", "neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid"] {
            t = c.op(&format!("{op}_inplace"), &[&t], vec![]);
        }
        c.op_as("r", "copy", &[&t], vec![]);
        c.out("r");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "add_mul_inplace_self_operand",
            "add_inplace(t, t) and then mul_inplace(u, u) on f64 intermediates (x += x)",
        );
        let mut rng = Rng::new(&c.name);
        let x = operand("add", Dt::F64, 0, &[3, 3], &mut rng);
        c.input("x", &x);
        let t = c.op("neg", &["x"], vec![]);
        let u = c.op("add_inplace", &[&t, &t], vec![]);
        c.op_as("r", "mul_inplace", &[&u, &u], vec![]);
        c.out("r");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "sub_inplace_f32_view_of_mutable_input",
            "sub_inplace(x[::-1, 1::2], y): destroys a negative-stride view of a mutable input",
        );
        let mut rng = Rng::new(&c.name);
        let x = operand("sub", Dt::F32, 0, &[3, 8], &mut rng);
        let y = operand("sub", Dt::F32, 1, &[3, 4], &mut rng);
        c.input_mut("x", &x);
        c.input("y", &y);
        c.view_as("xv", "x", &[Ix::R(-1, LO, -1), Ix::R(1, HI, 2)]);
        c.op_as("r", "sub_inplace", &["xv", "y"], vec![]);
        c.out("r");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "add_inplace_i32_transposed_mutable_input",
            "add_inplace(transpose(x), y): the output keeps the transposed layout",
        );
        let mut rng = Rng::new(&c.name);
        let x = operand("add", Dt::I32, 0, &[4, 3], &mut rng);
        let y = operand("add", Dt::I32, 1, &[3, 4], &mut rng);
        c.input_mut("x", &x);
        c.input("y", &y);
        c.op_as("xt", "transpose", &["x"], vec![]);
        c.op_as("r", "add_inplace", &["xt", "y"], vec![]);
        c.out("r");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "maximum_inplace_f64_scalar_operand",
            "maximum_inplace(t, 0-d c) on an intermediate: the 0-d operand broadcasts",
        );
        let mut rng = Rng::new(&c.name);
        let x = operand("add", Dt::F64, 0, &[2, 3, 2], &mut rng);
        c.input("x", &x);
        c.input("c", &A::scalar(Dt::F64, 0.75));
        let t = c.op("abs", &["x"], vec![]);
        c.op_as("r", "maximum_inplace", &[&t, "c"], vec![]);
        c.out("r");
        v.push(c);
    }
}

fn reduce_source(dt: Dt, shape: &[usize], rng: &mut Rng) -> A {
    // Distinct values (no ties for max/min/argmax), exact in f32.
    let n = numel(shape);
    let mut pool: Vec<i64> = (0..n as i64).map(|k| k * 3 - n as i64).collect();
    for i in (1..pool.len()).rev() {
        let j = rng.int(0, i as i64) as usize;
        pool.swap(i, j);
    }
    let scale = if dt.is_float() { 0.25 } else { 1.0 };
    A::from_f64(
        dt,
        shape,
        &pool.iter().map(|&k| k as f64 * scale).collect::<Vec<_>>(),
    )
}

fn reduction_cases(v: &mut Vec<Case>) {
    for op in ["sum", "mean", "max", "min"] {
        let dts: &[Dt] = if op == "mean" { &FLOATS } else { &NUMERIC };
        for &dt in dts {
            let name = format!("{op}_{}_axes", dt.name());
            let mut rng = Rng::new(&name);
            let mut c = Case::new(
                &name,
                format!(
                    "{op} on {} [2, 3, 4]: all axes, [0], [-1] keepdims, [0, 2], [] and all keepdims",
                    dt.name()
                ),
            );
            let x = reduce_source(dt, &[2, 3, 4], &mut rng);
            c.input("x", &x);
            let variants: [(&str, At); 6] = [
                ("all", vec![]),
                ("ax0", at1("axes", ints(&[0]))),
                (
                    "ax_last_keep",
                    vec![("axes", ints(&[-1])), ("keepdims", J::Bool(true))],
                ),
                ("ax02", at1("axes", ints(&[0, 2]))),
                ("none", at1("axes", ints(&[]))),
                ("all_keep", at1("keepdims", J::Bool(true))),
            ];
            for (o, at) in variants {
                c.op_as(o, op, &["x"], at);
                c.out(o);
            }
            v.push(c);
        }
        // Strided and broadcast inputs.
        let dt = if op == "mean" { Dt::F64 } else { Dt::I32 };
        let name = format!("{op}_{}_strided", dt.name());
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!(
                "{op} on {}: transposed [4, 3] over axes [0] and all; x[::-1, 1::2] over [1] keepdims",
                dt.name()
            ),
        );
        let a = reduce_source(dt, &[4, 3], &mut rng);
        let b = reduce_source(dt, &[3, 5], &mut rng);
        c.strided("a", &a, 0);
        c.strided("b", &b, 1);
        c.op_as("a0", op, &["a"], at1("axes", ints(&[0])));
        c.op_as("aall", op, &["a"], vec![]);
        c.op_as(
            "b1",
            op,
            &["b"],
            vec![("axes", ints(&[1])), ("keepdims", J::Bool(true))],
        );
        c.out("a0").out("aall").out("b1");
        v.push(c);

        let dt = if op == "mean" { Dt::F32 } else { Dt::F64 };
        let name = format!("{op}_{}_broadcast", dt.name());
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!(
                "{op} of broadcast_to({} [3, 1] -> [2, 3, 4]) over [0, 2] and [1]",
                dt.name()
            ),
        );
        let x = reduce_source(dt, &[3, 1], &mut rng);
        c.input("x", &x);
        c.op_as("xb", "broadcast_to", &["x"], at1("shape", ints(&[2, 3, 4])));
        c.op_as("r02", op, &["xb"], at1("axes", ints(&[0, 2])));
        c.op_as("r1", op, &["xb"], at1("axes", ints(&[1])));
        c.out("r02").out("r1");
        v.push(c);
    }
    {
        let mut c = Case::new("sum_i32_wrap", "the i32 sum keeps i32 and wraps on overflow");
        let m = i32::MAX as i64;
        c.input("x", &A::ints(Dt::I32, &[2, 3], &[m, 1, 5, m, m, -3]));
        c.op_as("all", "sum", &["x"], vec![]);
        c.op_as("ax1", "sum", &["x"], at1("axes", ints(&[1])));
        c.out("all").out("ax1");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "max_min_argmax_f64_nan",
            "max/min propagate NaN; argmax gives the first NaN",
        );
        let nan = f64::NAN;
        c.input(
            "x",
            &A::from_f64(Dt::F64, &[2, 4], &[1.0, nan, 3.0, nan, -1.0, 5.0, 2.0, 0.5]),
        );
        c.op_as("mx", "max", &["x"], at1("axes", ints(&[1])));
        c.op_as("mn", "min", &["x"], at1("axes", ints(&[1])));
        c.op_as("am", "argmax", &["x"], at1("axis", J::Int(1)));
        c.op_as("amall", "argmax", &["x"], vec![]);
        c.out("mx").out("mn").out("am").out("amall");
        v.push(c);
    }
    for dt in NUMERIC {
        let name = format!("argmax_{}", dt.name());
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!(
                "argmax on {} [2, 3, 4]: flattened, axis 0, axis -1 keepdims, axis 1, flattened keepdims",
                dt.name()
            ),
        );
        let x = reduce_source(dt, &[2, 3, 4], &mut rng);
        c.input("x", &x);
        let variants: [(&str, At); 5] = [
            ("flat", vec![]),
            ("ax0", at1("axis", J::Int(0))),
            (
                "ax_last_keep",
                vec![("axis", J::Int(-1)), ("keepdims", J::Bool(true))],
            ),
            ("ax1", at1("axis", J::Int(1))),
            ("flat_keep", at1("keepdims", J::Bool(true))),
        ];
        for (o, at) in variants {
            c.op_as(o, "argmax", &["x"], at);
            c.out(o);
        }
        v.push(c);
    }
    {
        let mut c = Case::new(
            "argmax_f32_strided",
            "argmax of a transposed and of a reversed step-2 input: flattened C order of the view",
        );
        let mut rng = Rng::new(&c.name);
        let a = reduce_source(Dt::F32, &[4, 3], &mut rng);
        let b = reduce_source(Dt::F32, &[3, 5], &mut rng);
        c.strided("a", &a, 0);
        c.strided("b", &b, 1);
        c.op_as("aflat", "argmax", &["a"], vec![]);
        c.op_as("a0", "argmax", &["a"], at1("axis", J::Int(0)));
        c.op_as("bflat", "argmax", &["b"], vec![]);
        c.op_as("b1", "argmax", &["b"], at1("axis", J::Int(1)));
        c.out("aflat").out("a0").out("bflat").out("b1");
        v.push(c);
    }
    {
        let mut c = Case::new("argmax_i32_ties", "argmax returns the first of tied maxima");
        c.input(
            "x",
            &A::ints(Dt::I32, &[3, 4], &[1, 7, 7, 0, 5, 5, 5, 5, -1, -3, 2, 2]),
        );
        c.op_as("ax1", "argmax", &["x"], at1("axis", J::Int(1)));
        c.op_as("ax0", "argmax", &["x"], at1("axis", J::Int(0)));
        c.op_as("flat", "argmax", &["x"], vec![]);
        c.out("ax1").out("ax0").out("flat");
        v.push(c);
    }
}

fn mm_operand(dt: Dt, shape: &[usize], rng: &mut Rng) -> A {
    if dt.is_float() {
        gen(dt, shape, || rng.step(-2.0, 2.0, 0.25))
    } else {
        gen(dt, shape, || rng.int(-9, 9) as f64)
    }
}

fn matmul_cases(v: &mut Vec<Case>) {
    for dt in NUMERIC {
        let d = dt.name();
        let mut rng = Rng::new(&format!("matmul_{d}"));
        {
            let mut c = Case::new(format!("matmul_{d}_2d"), format!("[3, 4] @ [4, 5] on {d}"));
            let a = mm_operand(dt, &[3, 4], &mut rng);
            let b = mm_operand(dt, &[4, 5], &mut rng);
            c.input("a", &a);
            c.input("b", &b);
            c.op_as("y", "matmul", &["a", "b"], vec![]);
            c.out("y");
            v.push(c);
        }
        if dt != Dt::I32 {
            let mut c = Case::new(
                format!("matmul_{d}_1d"),
                format!("{d}: [4] @ [4, 3], [3, 4] @ [4], [4] @ [4] (0-d), [4] @ [2, 4, 3]"),
            );
            c.input("v", &mm_operand(dt, &[4], &mut rng));
            c.input("m", &mm_operand(dt, &[4, 3], &mut rng));
            c.input("n", &mm_operand(dt, &[3, 4], &mut rng));
            c.input("w", &mm_operand(dt, &[4], &mut rng));
            c.input("s", &mm_operand(dt, &[2, 4, 3], &mut rng));
            c.op_as("vm", "matmul", &["v", "m"], vec![]);
            c.op_as("nv", "matmul", &["n", "v"], vec![]);
            c.op_as("vw", "matmul", &["v", "w"], vec![]);
            c.op_as("vs", "matmul", &["v", "s"], vec![]);
            c.out("vm").out("nv").out("vw").out("vs");
            v.push(c);
        }
        {
            let mut c = Case::new(
                format!("matmul_{d}_batched"),
                format!("[2, 3, 4] @ [2, 4, 2] on {d}"),
            );
            c.input("a", &mm_operand(dt, &[2, 3, 4], &mut rng));
            c.input("b", &mm_operand(dt, &[2, 4, 2], &mut rng));
            c.op_as("y", "matmul", &["a", "b"], vec![]);
            c.out("y");
            v.push(c);
        }
        if dt != Dt::I32 {
            let mut c = Case::new(
                format!("matmul_{d}_broadcast_batch"),
                format!("[2, 1, 3, 4] @ [3, 4, 2] -> [2, 3, 3, 2], and [3, 4] @ [2, 4, 2] on {d}"),
            );
            c.input("a", &mm_operand(dt, &[2, 1, 3, 4], &mut rng));
            c.input("b", &mm_operand(dt, &[3, 4, 2], &mut rng));
            c.input("m", &mm_operand(dt, &[3, 4], &mut rng));
            c.input("s", &mm_operand(dt, &[2, 4, 2], &mut rng));
            c.op_as("y", "matmul", &["a", "b"], vec![]);
            c.op_as("z", "matmul", &["m", "s"], vec![]);
            c.out("y").out("z");
            v.push(c);
        }
        {
            let mut c = Case::new(
                format!("matmul_{d}_transposed"),
                format!("a.T @ b.T and a.T @ b[::-1, 1::2] on {d} (operands are views)"),
            );
            let a = mm_operand(dt, &[3, 4], &mut rng);
            let b = mm_operand(dt, &[4, 2], &mut rng);
            let b2 = mm_operand(dt, &[4, 2], &mut rng);
            c.strided("a", &a, 0);
            c.strided("b", &b, 0);
            c.strided("b2", &b2, 1);
            c.op_as("y", "matmul", &["a", "b"], vec![]);
            c.op_as("z", "matmul", &["a", "b2"], vec![]);
            c.out("y").out("z");
            v.push(c);
        }
    }
    {
        let mut c = Case::new(
            "matmul_f64_batched_transposed",
            "transpose(a, [0, 2, 1]) @ b[:, ::-1, 1::2] on f64 batches",
        );
        let mut rng = Rng::new(&c.name);
        let a = mm_operand(Dt::F64, &[2, 3, 4], &mut rng);
        let b = mm_operand(Dt::F64, &[2, 4, 3], &mut rng);
        c.strided("a", &a, 0);
        c.strided("b", &b, 1);
        c.op_as("y", "matmul", &["a", "b"], vec![]);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "matmul_f32_broadcast_to_operand",
            "broadcast_to(m [3, 4] -> [2, 3, 4]) @ s [2, 4, 2]: a zero-stride batch axis",
        );
        let mut rng = Rng::new(&c.name);
        c.input("m", &mm_operand(Dt::F32, &[3, 4], &mut rng));
        c.input("s", &mm_operand(Dt::F32, &[2, 4, 2], &mut rng));
        c.op_as("mb", "broadcast_to", &["m"], at1("shape", ints(&[2, 3, 4])));
        c.op_as("y", "matmul", &["mb", "s"], vec![]);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new("matmul_i32_wrap", "i32 matmul wraps on overflow");
        let big = 1i64 << 30;
        c.input("a", &A::ints(Dt::I32, &[2, 2], &[big, big, 3, -big]));
        c.input("b", &A::ints(Dt::I32, &[2, 2], &[4, 1, 2, 3]));
        c.op_as("y", "matmul", &["a", "b"], vec![]);
        c.out("y");
        v.push(c);
    }
}

fn view_op_cases(v: &mut Vec<Case>) {
    {
        let mut c = Case::new(
            "transpose_default_and_perm",
            "transpose of f32 [2, 3, 4] with the default (reversed) perm and perm [1, 2, 0]; i64 [3, 5] default",
        );
        let mut rng = Rng::new(&c.name);
        c.input("x", &reduce_source(Dt::F32, &[2, 3, 4], &mut rng));
        c.input("w", &reduce_source(Dt::I64, &[3, 5], &mut rng));
        c.op_as("d", "transpose", &["x"], vec![]);
        c.op_as("p", "transpose", &["x"], at1("perm", ints(&[1, 2, 0])));
        c.op_as("wt", "transpose", &["w"], vec![]);
        c.out("d").out("p").out("wt");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "transpose_bool_of_view_then_relu",
            "transpose(x[::-1, 1::2]) on bool, and relu(transpose(transpose(w))) on f64",
        );
        let mut rng = Rng::new(&c.name);
        let x = gen(Dt::Bool, &[3, 4], || rng.int(0, 1) as f64);
        c.strided("x", &x, 1);
        c.op_as("xt", "transpose", &["x"], vec![]);
        c.input("w", &operand("add", Dt::F64, 0, &[3, 4], &mut rng));
        let t1 = c.op("transpose", &["w"], vec![]);
        let t2 = c.op("transpose", &[&t1], vec![]);
        c.op_as("r", "relu", &[&t2], vec![]);
        c.out("xt").out("r");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "reshape_contiguous_and_minus_one",
            "reshape f64 [2, 6] to [3, 4], [-1], [2, -1, 3]; i32 [12] to [4, 3]",
        );
        let mut rng = Rng::new(&c.name);
        c.input("x", &reduce_source(Dt::F64, &[2, 6], &mut rng));
        c.input("w", &reduce_source(Dt::I32, &[12], &mut rng));
        c.op_as("a", "reshape", &["x"], at1("shape", ints(&[3, 4])));
        c.op_as("b", "reshape", &["x"], at1("shape", ints(&[-1])));
        c.op_as("d", "reshape", &["x"], at1("shape", ints(&[2, -1, 3])));
        c.op_as("e", "reshape", &["w"], at1("shape", ints(&[4, 3])));
        c.out("a").out("b").out("d").out("e");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "reshape_of_strided_copies",
            "reshape of transpose(x) and of x[::-1, 1::2] (not expressible as views: copies) on f32 and bool",
        );
        let mut rng = Rng::new(&c.name);
        let a = reduce_source(Dt::F32, &[3, 4], &mut rng);
        let b = gen(Dt::Bool, &[2, 3], || rng.int(0, 1) as f64);
        c.strided("a", &a, 0);
        c.strided("b", &b, 1);
        c.op_as("ar", "reshape", &["a"], at1("shape", ints(&[-1])));
        c.op_as("ar2", "reshape", &["a"], at1("shape", ints(&[2, 6])));
        c.op_as("br", "reshape", &["b"], at1("shape", ints(&[3, 2])));
        c.out("ar").out("ar2").out("br");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "expand_dims_squeeze",
            "expand_dims axis 0 / -1 / 1, squeeze default and with axes, on i64 and f32",
        );
        let mut rng = Rng::new(&c.name);
        c.input("x", &reduce_source(Dt::I64, &[3, 4], &mut rng));
        c.input("w", &reduce_source(Dt::F32, &[1, 3, 1, 2], &mut rng));
        c.op_as("e0", "expand_dims", &["x"], at1("axis", J::Int(0)));
        c.op_as("em1", "expand_dims", &["x"], at1("axis", J::Int(-1)));
        c.op_as("e1", "expand_dims", &["x"], at1("axis", J::Int(1)));
        c.op_as("sq", "squeeze", &["w"], vec![]);
        c.op_as("sq2", "squeeze", &["w"], at1("axes", ints(&[2])));
        c.op_as("sq0", "squeeze", &["w"], at1("axes", ints(&[0, -2])));
        c.out("e0").out("em1").out("e1").out("sq").out("sq2").out("sq0");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "expand_dims_squeeze_of_views",
            "squeeze(expand_dims(transpose(x), 1)) and expand_dims of x[::-1, 1::2] on f64 and bool",
        );
        let mut rng = Rng::new(&c.name);
        let a = reduce_source(Dt::F64, &[3, 4], &mut rng);
        let b = gen(Dt::Bool, &[2, 3], || rng.int(0, 1) as f64);
        c.strided("a", &a, 0);
        c.strided("b", &b, 1);
        let e = c.op("expand_dims", &["a"], at1("axis", J::Int(1)));
        c.op_as("sq", "squeeze", &[&e], vec![]);
        c.op_as("eb", "expand_dims", &["b"], at1("axis", J::Int(-1)));
        c.out("sq").out("eb");
        v.push(c);
    }
    for dt in DTYPES {
        let name = format!("broadcast_to_{}", dt.name());
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!(
                "broadcast_to on {}: [3] -> [2, 3], [2, 1] -> [2, 2, 4], 0-d -> [3]",
                dt.name()
            ),
        );
        c.input("x", &cmp_operand(dt, &[3], &mut rng));
        c.input("w", &cmp_operand(dt, &[2, 1], &mut rng));
        c.input("z", &cmp_operand(dt, &[], &mut rng));
        c.op_as("xb", "broadcast_to", &["x"], at1("shape", ints(&[2, 3])));
        c.op_as("wb", "broadcast_to", &["w"], at1("shape", ints(&[2, 2, 4])));
        c.op_as("zb", "broadcast_to", &["z"], at1("shape", ints(&[3])));
        c.out("xb").out("wb").out("zb");
        v.push(c);
    }
}

/// A `strided_slice` case: name, dtype, input shape, index, description.
type SliceCase = (&'static str, Dt, Vec<usize>, Vec<Ix>, &'static str);

fn copy_op_cases(v: &mut Vec<Case>) {
    let slices: [SliceCase; 4] = [
        (
            "strided_slice_f32",
            Dt::F32,
            vec![4, 6],
            vec![Ix::R(1, HI, 1), Ix::R(-1, LO, -2)],
            "x[1:, ::-2]",
        ),
        (
            "strided_slice_i64_point_new_axis",
            Dt::I64,
            vec![3, 4, 5],
            vec![Ix::P(-1), Ix::New, Ix::Ri(1, 3, 1)],
            "x[-1, None, 1..=3]",
        ),
        (
            "strided_slice_bool",
            Dt::Bool,
            vec![5, 4],
            vec![Ix::R(4, 0, -2), Ix::All],
            "x[4:0:-2, :]",
        ),
        (
            "strided_slice_i32_empty",
            Dt::I32,
            vec![4, 3],
            vec![Ix::R(3, 1, 1)],
            "x[3:1] (empty)",
        ),
    ];
    for (name, dt, shape, ix, about) in slices {
        let mut c = Case::new(name, format!("strided_slice {about} on {} {shape:?}", dt.name()));
        let mut rng = Rng::new(name);
        c.input("x", &cmp_operand(dt, &shape, &mut rng));
        let names = c.index_consts(&ix);
        let mut ins = vec!["x"];
        ins.extend(names.iter().map(String::as_str));
        c.op_as("y", "strided_slice", &ins, vec![]);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "strided_slice_f64_of_transposed",
            "strided_slice(transpose(x), [::-1, 1]) on f64: a copy of a view",
        );
        let mut rng = Rng::new(&c.name);
        let a = reduce_source(Dt::F64, &[3, 4], &mut rng);
        c.strided("a", &a, 0);
        let names = c.index_consts(&[Ix::R(-1, LO, -1), Ix::P(1)]);
        c.op_as("y", "strided_slice", &["a", &names[0], &names[1]], vec![]);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "gather_f32_axis0_2d_indices",
            "gather(x [5, 3], indices [2, 2] with -1 and repeats, axis 0) on f32",
        );
        let mut rng = Rng::new(&c.name);
        c.input("x", &reduce_source(Dt::F32, &[5, 3], &mut rng));
        c.input("idx", &A::ints(Dt::I64, &[2, 2], &[4, -1, 0, 2]));
        c.op_as("y", "gather", &["x", "idx"], vec![]);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "gather_i64_axis1_and_last",
            "gather on i64 [3, 4, 2] along axis 1 and -1 (indices [3] and 0-d)",
        );
        let mut rng = Rng::new(&c.name);
        c.input("x", &reduce_source(Dt::I64, &[3, 4, 2], &mut rng));
        c.input("idx", &A::ints(Dt::I64, &[3], &[3, 0, -2]));
        c.input("k", &A::ints(Dt::I64, &[], &[1]));
        c.op_as("y", "gather", &["x", "idx"], at1("axis", J::Int(1)));
        c.op_as("z", "gather", &["x", "k"], at1("axis", J::Int(-1)));
        c.out("y").out("z");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "gather_f64_strided_input",
            "gather on transpose(x) along axis 1 and on x[::-1, 1::2] along axis 0 (wide rows)",
        );
        let mut rng = Rng::new(&c.name);
        let a = reduce_source(Dt::F64, &[3, 4], &mut rng);
        let b = reduce_source(Dt::F64, &[4, 10], &mut rng);
        c.strided("a", &a, 0);
        c.strided("b", &b, 1);
        c.input("idx", &A::ints(Dt::I64, &[4], &[2, 2, -3, 1]));
        c.op_as("y", "gather", &["a", "idx"], at1("axis", J::Int(1)));
        c.op_as("z", "gather", &["b", "idx"], at1("axis", J::Int(0)));
        c.out("y").out("z");
        v.push(c);
    }
    {
        let mut c = Case::new("gather_bool_i32", "gather on bool [6] and i32 [2, 3] (axis -1)");
        let mut rng = Rng::new(&c.name);
        c.input("x", &gen(Dt::Bool, &[6], || rng.int(0, 1) as f64));
        c.input("w", &reduce_source(Dt::I32, &[2, 3], &mut rng));
        c.input("idx", &A::ints(Dt::I64, &[4], &[5, 0, -6, 2]));
        c.input("jdx", &A::ints(Dt::I64, &[2], &[2, -3]));
        c.op_as("y", "gather", &["x", "idx"], vec![]);
        c.op_as("z", "gather", &["w", "jdx"], at1("axis", J::Int(-1)));
        c.out("y").out("z");
        v.push(c);
    }
    for dt in DTYPES {
        let name = format!("concat_{}", dt.name());
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!(
                "concat on {}: axis 0 of [2, 3], transposed [3, 3] and broadcast_to [1, 3]; axis -1 of [3, 2] and [3, 1]",
                dt.name()
            ),
        );
        let a = cmp_operand(dt, &[2, 3], &mut rng);
        let b = cmp_operand(dt, &[3, 3], &mut rng);
        let r = cmp_operand(dt, &[3], &mut rng);
        let p = cmp_operand(dt, &[3, 2], &mut rng);
        let q = cmp_operand(dt, &[3, 1], &mut rng);
        c.input("a", &a);
        c.strided("b", &b, 0);
        c.input("r", &r);
        c.input("p", &p);
        c.input("q", &q);
        c.op_as("rb", "broadcast_to", &["r"], at1("shape", ints(&[1, 3])));
        c.op_as("y", "concat", &["a", "b", "rb"], vec![]);
        c.op_as("z", "concat", &["p", "q", "p"], at1("axis", J::Int(-1)));
        c.out("y").out("z");
        v.push(c);
    }
    for dt in DTYPES {
        let name = format!("stack_{}", dt.name());
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!(
                "stack on {}: three [2, 3] (one reversed step 2) along axes 0, 1, -1",
                dt.name()
            ),
        );
        let a = cmp_operand(dt, &[2, 3], &mut rng);
        let b = cmp_operand(dt, &[2, 3], &mut rng);
        let d = cmp_operand(dt, &[2, 3], &mut rng);
        c.input("a", &a);
        c.strided("b", &b, 1);
        c.input("d", &d);
        c.op_as("s0", "stack", &["a", "b", "d"], vec![]);
        c.op_as("s1", "stack", &["a", "b", "d"], at1("axis", J::Int(1)));
        c.op_as("sl", "stack", &["d", "a", "b"], at1("axis", J::Int(-1)));
        c.out("s0").out("s1").out("sl");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "copy_of_views",
            "copy of transpose(f32), of x[::-1, 1::2] (i32), of broadcast_to (bool) and of a contiguous f64",
        );
        let mut rng = Rng::new(&c.name);
        let a = reduce_source(Dt::F32, &[3, 4], &mut rng);
        let b = reduce_source(Dt::I32, &[3, 4], &mut rng);
        c.strided("a", &a, 0);
        c.strided("b", &b, 1);
        c.input("m", &A::bools(&[3], &[true, false, false]));
        c.input("f", &reduce_source(Dt::F64, &[2, 2], &mut rng));
        c.op_as("mb", "broadcast_to", &["m"], at1("shape", ints(&[2, 3])));
        c.op_as("ca", "copy", &["a"], vec![]);
        c.op_as("cb", "copy", &["b"], vec![]);
        c.op_as("cm", "copy", &["mb"], vec![]);
        c.op_as("cf", "copy", &["f"], vec![]);
        c.out("ca").out("cb").out("cm").out("cf");
        v.push(c);
    }
}

fn subtensor_cases(v: &mut Vec<Case>) {
    struct S {
        name: &'static str,
        op: &'static str,
        dt: Dt,
        x: Vec<usize>,
        value: Vec<usize>,
        ix: Vec<Ix>,
        about: &'static str,
    }
    let list = vec![
        S {
            name: "set_subtensor_f32_row_scalar",
            op: "set_subtensor",
            dt: Dt::F32,
            x: vec![3, 4],
            value: vec![],
            ix: vec![Ix::P(1)],
            about: "x[1] = 0-d value",
        },
        S {
            name: "set_subtensor_i64_strided_region",
            op: "set_subtensor",
            dt: Dt::I64,
            x: vec![4, 6],
            value: vec![3],
            ix: vec![Ix::R(-1, LO, -2), Ix::R(1, HI, 2)],
            about: "x[::-2, 1::2] = row [3] (broadcast)",
        },
        S {
            name: "set_subtensor_f64_leading_unit_axes",
            op: "set_subtensor",
            dt: Dt::F64,
            x: vec![2, 3],
            value: vec![1, 1, 3],
            ix: vec![Ix::P(0)],
            about: "x[0] = value [1, 1, 3] (leading 1s dropped, as numpy)",
        },
        S {
            name: "set_subtensor_bool_column",
            op: "set_subtensor",
            dt: Dt::Bool,
            x: vec![3, 4],
            value: vec![3],
            ix: vec![Ix::All, Ix::P(-1)],
            about: "x[:, -1] = value [3]",
        },
        S {
            name: "set_subtensor_i32_new_axis",
            op: "set_subtensor",
            dt: Dt::I32,
            x: vec![3, 4],
            value: vec![1, 2, 4],
            ix: vec![Ix::New, Ix::R(0, 2, 1)],
            about: "x[None, 0:2] = value [1, 2, 4]",
        },
        S {
            name: "inc_subtensor_f64_negative_stride",
            op: "inc_subtensor",
            dt: Dt::F64,
            x: vec![5, 3],
            value: vec![3, 1],
            ix: vec![Ix::R(4, LO, -2)],
            about: "x[4::-2] += value [3, 1]",
        },
        S {
            name: "inc_subtensor_i32_point",
            op: "inc_subtensor",
            dt: Dt::I32,
            x: vec![2, 3, 4],
            value: vec![4],
            ix: vec![Ix::P(-1), Ix::P(1)],
            about: "x[-1, 1] += value [4]",
        },
        S {
            name: "inc_subtensor_f32_all",
            op: "inc_subtensor",
            dt: Dt::F32,
            x: vec![3, 4],
            value: vec![3, 4],
            ix: vec![],
            about: "x[...] += value [3, 4] (no index)",
        },
        S {
            name: "inc_subtensor_i64_inclusive",
            op: "inc_subtensor",
            dt: Dt::I64,
            x: vec![6],
            value: vec![],
            ix: vec![Ix::Ri(1, 4, 3)],
            about: "x[1..=4:3] += 0-d value",
        },
    ];
    for t in list {
        let mut c = Case::new(t.name, format!("{} on {} {:?}", t.about, t.dt.name(), t.x));
        let mut rng = Rng::new(t.name);
        c.input("x", &cmp_operand(t.dt, &t.x, &mut rng));
        c.input("value", &reduce_source(t.dt, &t.value, &mut rng).map(t.dt, |x| x));
        c.subtensor_as("y", t.op, "x", "value", &t.ix);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "set_inc_subtensor_f64_views",
            "set_subtensor(a, b[0], [1:3, :]) with a = transpose(a_src), b = b_src[::-1, 1::2]; inc_subtensor(b, broadcast_to(r [4] -> [2, 4])) on f64",
        );
        let mut rng = Rng::new(&c.name);
        let a = reduce_source(Dt::F64, &[3, 4], &mut rng);
        let b = reduce_source(Dt::F64, &[2, 4], &mut rng);
        c.strided("a", &a, 0);
        c.strided("b", &b, 1);
        c.input("r", &reduce_source(Dt::F64, &[4], &mut rng));
        c.op_as("rb", "broadcast_to", &["r"], at1("shape", ints(&[2, 4])));
        let bv = c.view_as("b0", "b", &[Ix::P(0)]);
        c.subtensor_as("y", "set_subtensor", "a", &bv, &[Ix::R(1, 3, 1), Ix::All]);
        c.subtensor_as("z", "inc_subtensor", "b", "rb", &[Ix::All]);
        c.out("y").out("z");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "set_subtensor_inplace_f32_mutable_input",
            "set_subtensor_inplace(x, value, [1:, ::2]) on a mutable f32 input",
        );
        let mut rng = Rng::new(&c.name);
        c.input_mut("x", &operand("add", Dt::F32, 0, &[3, 4], &mut rng));
        c.input("value", &operand("add", Dt::F32, 1, &[2, 1], &mut rng));
        c.subtensor_as(
            "y",
            "set_subtensor_inplace",
            "x",
            "value",
            &[Ix::R(1, HI, 1), Ix::R(LO, HI, 2)],
        );
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "inc_subtensor_inplace_i64_mutable_input",
            "inc_subtensor_inplace(x, value, [::-1, 2]) on a mutable i64 input",
        );
        let mut rng = Rng::new(&c.name);
        c.input_mut("x", &operand("add", Dt::I64, 0, &[4, 3], &mut rng));
        c.input("value", &operand("add", Dt::I64, 1, &[4], &mut rng));
        c.subtensor_as(
            "y",
            "inc_subtensor_inplace",
            "x",
            "value",
            &[Ix::R(-1, LO, -1), Ix::P(2)],
        );
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "set_inc_subtensor_inplace_chain_intermediate",
            "t = copy(x); set_subtensor_inplace(t, a, [0]); inc_subtensor_inplace(., b, [:, 1::2]); set_subtensor_inplace(., c, [-1, -1]) on f64",
        );
        let mut rng = Rng::new(&c.name);
        c.input("x", &operand("add", Dt::F64, 0, &[3, 4], &mut rng));
        c.input("a", &operand("add", Dt::F64, 0, &[4], &mut rng));
        c.input("b", &operand("add", Dt::F64, 0, &[3, 2], &mut rng));
        c.input("c", &A::scalar(Dt::F64, -9.5));
        let t = c.op("copy", &["x"], vec![]);
        c.subtensor_as("u", "set_subtensor_inplace", &t, "a", &[Ix::P(0)]);
        c.subtensor_as(
            "w",
            "inc_subtensor_inplace",
            "u",
            "b",
            &[Ix::All, Ix::R(1, HI, 2)],
        );
        c.subtensor_as("y", "set_subtensor_inplace", "w", "c", &[Ix::P(-1), Ix::P(-1)]);
        c.out("y");
        v.push(c);
    }
    {
        let mut c = Case::new(
            "inc_subtensor_inplace_f64_self_value",
            "t = copy(x); inc_subtensor_inplace(t, t, [::-1]): t[::-1] += t reads the value before writing",
        );
        let mut rng = Rng::new(&c.name);
        c.input("x", &operand("add", Dt::F64, 0, &[4, 3], &mut rng));
        let t = c.op("copy", &["x"], vec![]);
        c.subtensor_as("y", "inc_subtensor_inplace", &t, &t, &[Ix::R(-1, LO, -1)]);
        c.out("y");
        v.push(c);
    }
}

fn nn_cases(v: &mut Vec<Case>) {
    for dt in FLOATS {
        let d = dt.name();
        for (op, lay) in ["softmax", "log_softmax"]
            .iter()
            .flat_map(|o| LAYOUTS.map(|l| (*o, l)))
        {
            let name = format!("{op}_{d}_{}", lay.name());
            let mut rng = Rng::new(&name);
            let mut c = Case::new(&name, String::new());
            let x = gen(dt, &[3, 5], || rng.step(-3.0, 3.0, 0.125));
            let src = match lay {
                Lay::Contig => {
                    c.about = format!("{op} on {d} [3, 5] along axis -1 and 0");
                    c.input("x", &x)
                }
                Lay::Strided => {
                    c.about = format!("{op} on transposed {d} [3, 5] along -1 and on x[::-1, 1::2] along 0");
                    let w = gen(dt, &[3, 5], || rng.step(-3.0, 3.0, 0.125));
                    c.strided("w", &w, 1);
                    c.op_as("yw", op, &["w"], at1("axis", J::Int(0)));
                    c.out("yw");
                    c.strided("x", &x, 0)
                }
                Lay::Bcast => {
                    c.about = format!("{op} of broadcast_to({d} [5] -> [3, 5]) along -1 and 0");
                    let r = gen(dt, &[5], || rng.step(-3.0, 3.0, 0.125));
                    c.input("r", &r);
                    c.op_as("x", "broadcast_to", &["r"], at1("shape", ints(&[3, 5])))
                }
            };
            c.op_as("y", op, &[&src], vec![]);
            c.op_as("y0", op, &[&src], at1("axis", J::Int(0)));
            c.out("y").out("y0");
            v.push(c);
        }
        {
            let mut c = Case::new(
                format!("softmax_log_softmax_{d}_large_logits"),
                format!("softmax and log_softmax of {d} logits near +-1000 (stable: max subtracted)"),
            );
            let x = A::from_f64(
                dt,
                &[3, 3],
                &[
                    1000.0, 1001.0, 1002.0, -1000.0, 0.0, 1000.0, -1000.0, -1001.0, -999.5,
                ],
            );
            c.input("x", &x);
            c.op_as("s", "softmax", &["x"], vec![]);
            c.op_as("l", "log_softmax", &["x"], vec![]);
            c.out("s").out("l");
            v.push(c);
        }
        {
            let mut c = Case::new(
                format!("cross_entropy_{d}"),
                format!("cross_entropy(logits {d} [4, 5], labels i64 [4]); and on transposed logits"),
            );
            let mut rng = Rng::new(&c.name);
            let l = gen(dt, &[4, 5], || rng.step(-3.0, 3.0, 0.125));
            let lt = gen(dt, &[4, 5], || rng.step(-3.0, 3.0, 0.125));
            c.input("logits", &l);
            c.strided("lt", &lt, 0);
            c.input("labels", &A::ints(Dt::I64, &[4], &[2, 0, 4, 2]));
            c.op_as("loss", "cross_entropy", &["logits", "labels"], vec![]);
            c.op_as("loss_t", "cross_entropy", &["lt", "labels"], vec![]);
            c.out("loss").out("loss_t");
            v.push(c);
        }
        {
            let mut c = Case::new(
                format!("cross_entropy_{d}_views"),
                format!("cross_entropy of x[::-1, 1::2] and of broadcast_to([5] -> [3, 5]) logits on {d}"),
            );
            let mut rng = Rng::new(&c.name);
            let l = gen(dt, &[3, 5], || rng.step(-3.0, 3.0, 0.125));
            c.strided("l", &l, 1);
            c.input("r", &gen(dt, &[5], || rng.step(-3.0, 3.0, 0.125)));
            c.op_as("rb", "broadcast_to", &["r"], at1("shape", ints(&[3, 5])));
            c.input("labels", &A::ints(Dt::I64, &[3], &[4, 1, 0]));
            c.op_as("loss_s", "cross_entropy", &["l", "labels"], vec![]);
            c.op_as("loss_b", "cross_entropy", &["rb", "labels"], vec![]);
            c.out("loss_s").out("loss_b");
            v.push(c);
        }
        for lay in LAYOUTS {
            let name = format!("mse_{d}_{}", lay.name());
            let mut rng = Rng::new(&name);
            let mut c = Case::new(&name, String::new());
            let a = gen(dt, &[3, 4], || rng.step(-3.0, 3.0, 0.125));
            match lay {
                Lay::Contig => {
                    c.about = format!("mse(a, b) on {d} [3, 4]");
                    c.input("a", &a);
                    c.input("b", &gen(dt, &[3, 4], || rng.step(-3.0, 3.0, 0.125)));
                }
                Lay::Strided => {
                    c.about = format!("mse(transpose(a), b[::-1, 1::2]) on {d}");
                    c.strided("a", &a, 0);
                    c.strided("b", &gen(dt, &[3, 4], || rng.step(-3.0, 3.0, 0.125)), 1);
                }
                Lay::Bcast => {
                    c.about = format!("mse(a [3, 4], b [4]) and mse(a [3, 1], broadcast_to [3, 4]) on {d}");
                    c.input("a", &a);
                    c.input("b", &gen(dt, &[4], || rng.step(-3.0, 3.0, 0.125)));
                    c.input("p", &gen(dt, &[3, 1], || rng.step(-3.0, 3.0, 0.125)));
                    c.op_as("bb", "broadcast_to", &["b"], at1("shape", ints(&[3, 4])));
                    c.op_as("loss2", "mse", &["p", "bb"], vec![]);
                    c.out("loss2");
                }
            }
            c.op_as("loss", "mse", &["a", "b"], vec![]);
            c.out("loss");
            v.push(c);
        }
    }
}

/// Random ops: the random values are outputs without an expected file;
/// deterministic properties of them are checked instead.
fn random_cases(v: &mut Vec<Case>) {
    let tru = A::bools(&[], &[true]);
    {
        let mut c = Case::new(
            "random_uniform_f32_range_and_mean",
            "random_uniform [20, 20] in [-1, 3): every value in range, the mean within 0.375 of 1 (6 sigma), abs(mul(u, 0)) == 0 of shape [20, 20]",
        );
        c.op_as(
            "u",
            "random_uniform",
            &[],
            vec![
                ("shape", ints(&[20, 20])),
                ("low", J::Num(-1.0)),
                ("high", J::Num(3.0)),
                ("seed", J::Int(7)),
            ],
        );
        c.konst("lo", &A::scalar(Dt::F32, -1.0));
        c.konst("hi", &A::scalar(Dt::F32, 3.0));
        c.konst("center", &A::scalar(Dt::F32, 1.0));
        c.konst("tol", &A::scalar(Dt::F32, 0.375));
        c.konst("zero", &A::scalar(Dt::F32, 0.0));
        let ge = c.op("ge", &["u", "lo"], vec![]);
        let lt = c.op("lt", &["u", "hi"], vec![]);
        let gi = c.op("cast", &[&ge], at1("dtype", s("i32")));
        let li = c.op("cast", &[&lt], at1("dtype", s("i32")));
        let both = c.op("mul", &[&gi, &li], vec![]);
        c.op_as("in_range", "min", &[&both], vec![]);
        let m = c.op("mean", &["u"], vec![]);
        let dm = c.op("sub", &[&m, "center"], vec![]);
        let am = c.op("abs", &[&dm], vec![]);
        c.op_as("mean_ok", "lt", &[&am, "tol"], vec![]);
        let z = c.op("mul", &["u", "zero"], vec![]);
        c.op_as("zeros", "abs", &[&z], vec![]);
        c.out_unchecked("u")
            .out_expect("in_range", A::ints(Dt::I32, &[], &[1]))
            .out_expect("mean_ok", tru.clone())
            .out_expect("zeros", A::from_f64(Dt::F32, &[20, 20], &[0.0; 400]));
        v.push(c);
    }
    {
        let mut c = Case::new(
            "random_uniform_f64_low_equals_high",
            "random_uniform with low == high == 2.5 is the constant 2.5 (low + 0 * u)",
        );
        c.op_as(
            "u",
            "random_uniform",
            &[],
            vec![
                ("shape", ints(&[2, 3])),
                ("dtype", s("f64")),
                ("low", J::Num(2.5)),
                ("high", J::Num(2.5)),
            ],
        );
        c.out_expect("u", A::from_f64(Dt::F64, &[2, 3], &[2.5; 6]));
        v.push(c);
    }
    {
        let mut c = Case::new(
            "random_normal_f64_finite_and_mean",
            "random_normal [20, 20] mean 2 std 0.5: all finite (eq(x, x)), sample mean within 0.2 of 2 (8 sigma), abs(mul(x, 0)) == 0 of shape [20, 20]",
        );
        c.op_as(
            "x",
            "random_normal",
            &[],
            vec![
                ("shape", ints(&[20, 20])),
                ("dtype", s("f64")),
                ("mean", J::Num(2.0)),
                ("std", J::Num(0.5)),
                ("seed", J::Int(3)),
            ],
        );
        c.konst("center", &A::scalar(Dt::F64, 2.0));
        c.konst("tol", &A::scalar(Dt::F64, 0.2));
        c.konst("zero", &A::scalar(Dt::F64, 0.0));
        let e = c.op("eq", &["x", "x"], vec![]);
        let ei = c.op("cast", &[&e], at1("dtype", s("i64")));
        c.op_as("not_nan", "min", &[&ei], vec![]);
        let m = c.op("mean", &["x"], vec![]);
        let dm = c.op("sub", &[&m, "center"], vec![]);
        let am = c.op("abs", &[&dm], vec![]);
        c.op_as("mean_ok", "lt", &[&am, "tol"], vec![]);
        let z = c.op("mul", &["x", "zero"], vec![]);
        c.op_as("zeros", "abs", &[&z], vec![]);
        c.out_unchecked("x")
            .out_expect("not_nan", A::ints(Dt::I64, &[], &[1]))
            .out_expect("mean_ok", tru.clone())
            .out_expect("zeros", A::from_f64(Dt::F64, &[20, 20], &[0.0; 400]));
        v.push(c);
    }
    {
        let mut c = Case::new(
            "random_normal_f32_std_zero",
            "random_normal with std 0 is the constant mean (-1.5)",
        );
        c.op_as(
            "x",
            "random_normal",
            &[],
            vec![
                ("shape", ints(&[4])),
                ("mean", J::Num(-1.5)),
                ("std", J::Num(0.0)),
                ("seed", J::Int(1)),
            ],
        );
        c.out_expect("x", A::from_f64(Dt::F32, &[4], &[-1.5; 4]));
        v.push(c);
    }
    for dt in FLOATS {
        let d = dt.name();
        let mut c = Case::new(
            format!("dropout_{d}_p0"),
            format!("dropout with p = 0 is the identity, on {d} [3, 4] and on a transposed view"),
        );
        let mut rng = Rng::new(&c.name);
        let x = operand("add", dt, 0, &[3, 4], &mut rng);
        let w = operand("add", dt, 0, &[3, 4], &mut rng);
        c.input("x", &x);
        c.strided("w", &w, 0);
        c.op_as(
            "y",
            "dropout",
            &["x"],
            vec![("p", J::Num(0.0)), ("seed", J::Int(5))],
        );
        c.op_as("z", "dropout", &["w"], at1("p", J::Num(0.0)));
        c.out_expect("y", x.clone()).out_expect("z", w.clone());
        v.push(c);
    }
    {
        let mut c = Case::new(
            "dropout_f64_half",
            "dropout p = 0.5 on f64 [20, 20]: each output is 0 or 2x (|d (d - 2x)| == 0), kept fraction within 0.2 of 0.5",
        );
        let mut rng = Rng::new(&c.name);
        let x = operand("add", Dt::F64, 0, &[20, 20], &mut rng);
        c.input("x", &x);
        c.konst("two", &A::scalar(Dt::F64, 2.0));
        c.konst("zero", &A::scalar(Dt::F64, 0.0));
        c.konst("half", &A::scalar(Dt::F64, 0.5));
        c.konst("tol", &A::scalar(Dt::F64, 0.2));
        c.op_as(
            "d",
            "dropout",
            &["x"],
            vec![("p", J::Num(0.5)), ("seed", J::Int(11))],
        );
        let x2 = c.op("mul", &["x", "two"], vec![]);
        let diff = c.op("sub", &["d", &x2], vec![]);
        let prod = c.op("mul", &["d", &diff], vec![]);
        c.op_as("zero_or_2x", "abs", &[&prod], vec![]);
        let kept = c.op("ne", &["d", "zero"], vec![]);
        let kf = c.op("cast", &[&kept], at1("dtype", s("f64")));
        let frac = c.op("mean", &[&kf], vec![]);
        let df = c.op("sub", &[&frac, "half"], vec![]);
        let af = c.op("abs", &[&df], vec![]);
        c.op_as("fraction_ok", "lt", &[&af, "tol"], vec![]);
        c.out_unchecked("d")
            .out_expect("zero_or_2x", A::from_f64(Dt::F64, &[20, 20], &[0.0; 400]))
            .out_expect("fraction_ok", tru.clone());
        v.push(c);
    }
}

/// The ops added with the ONNX import: isnan, isinf, range, cumsum, trilu,
/// gather_elements, scatter_elements, prod, hardmax, layer_norm, einsum.
fn onnx_op_cases(v: &mut Vec<Case>) {
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -1.5, 2.0];
    for dt in FLOATS {
        let d = dt.name();
        let mut c = Case::new(
            format!("isnan_isinf_{d}"),
            format!("isnan and isinf (both signs, +inf only, -inf only) of {d} [2, 3] with NaN and ±inf; on its transpose too"),
        );
        let x = A::from_f64(dt, &[2, 3], &specials);
        c.input("x", &x);
        c.op_as("nan", "isnan", &["x"], vec![]);
        c.op_as("inf", "isinf", &["x"], vec![]);
        c.op_as("pos", "isinf", &["x"], at1("detect_negative", J::Bool(false)));
        c.op_as("neg", "isinf", &["x"], at1("detect_positive", J::Bool(false)));
        c.strided("xt", &x, 0);
        c.op_as("nan_t", "isnan", &["xt"], vec![]);
        c.out("nan").out("inf").out("pos").out("neg").out("nan_t");
        v.push(c);
    }
    {
        let mut c = Case::new("isnan_isinf_i64", "isnan and isinf of i64: all false");
        c.input("x", &A::ints(Dt::I64, &[4], &[0, -1, 7, i64::MAX]));
        c.op_as("nan", "isnan", &["x"], vec![]);
        c.op_as("inf", "isinf", &["x"], vec![]);
        c.out("nan").out("inf");
        v.push(c);
    }
    for dt in NUMERIC {
        let d = dt.name();
        let mut c = Case::new(
            format!("range_{d}"),
            format!("range of {d}: upward, downward, and empty (limit behind start)"),
        );
        let (a, b, step) = if dt.is_float() {
            (0.5, 3.0, 0.75)
        } else {
            (-2.0, 9.0, 3.0)
        };
        for (name, x) in [("s", a), ("l", b), ("d", step), ("nd", -step)] {
            c.input(name, &A::scalar(dt, x));
        }
        c.op_as("up", "range", &["s", "l", "d"], vec![]);
        c.op_as("down", "range", &["l", "s", "nd"], vec![]);
        c.op_as("none", "range", &["l", "s", "d"], vec![]);
        c.out("up").out("down").out("none");
        v.push(c);
    }
    for dt in NUMERIC {
        let d = dt.name();
        let name = format!("cumsum_{d}");
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!("cumsum of {d} [3, 4] along 0, -1 exclusive, 1 reverse, -1 exclusive reverse; along 0 of a transpose"),
        );
        let x = gen(dt, &[3, 4], || {
            rng.step(-8.0, 8.0, if dt.is_float() { 0.25 } else { 1.0 })
        });
        c.input("x", &x);
        c.op_as("a0", "cumsum", &["x"], vec![]);
        c.op_as(
            "ex",
            "cumsum",
            &["x"],
            vec![("axis", J::Int(-1)), ("exclusive", J::Bool(true))],
        );
        c.op_as(
            "rev",
            "cumsum",
            &["x"],
            vec![("axis", J::Int(1)), ("reverse", J::Bool(true))],
        );
        c.op_as(
            "both",
            "cumsum",
            &["x"],
            vec![
                ("axis", J::Int(-1)),
                ("exclusive", J::Bool(true)),
                ("reverse", J::Bool(true)),
            ],
        );
        c.strided("xt", &gen(dt, &[3, 4], || rng.step(-8.0, 8.0, 1.0)), 0);
        c.op_as("t0", "cumsum", &["xt"], vec![]);
        c.out("a0").out("ex").out("rev").out("both").out("t0");
        v.push(c);
    }
    {
        let mut c = Case::new("cumsum_i32_wrap", "i32 cumsum wraps on overflow");
        c.input("x", &A::ints(Dt::I32, &[3], &[i32::MAX as i64, 5, -3]));
        c.op_as("y", "cumsum", &["x"], vec![]);
        c.out("y");
        v.push(c);
    }
    for dt in DTYPES {
        let d = dt.name();
        let name = format!("trilu_{d}");
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!("triu and tril of {d} [2, 3, 4] with k 0, 1, -1; triu of a transpose"),
        );
        let x = gen(dt, &[2, 3, 4], || rng.step(1.0, 9.0, 1.0));
        c.input("x", &x);
        c.op_as("u", "trilu", &["x"], vec![]);
        c.op_as("u1", "trilu", &["x"], at1("k", J::Int(1)));
        c.op_as("l", "trilu", &["x"], at1("upper", J::Bool(false)));
        c.op_as(
            "lm1",
            "trilu",
            &["x"],
            vec![("upper", J::Bool(false)), ("k", J::Int(-1))],
        );
        c.strided("xt", &gen(dt, &[4, 3], || rng.step(1.0, 9.0, 1.0)), 0);
        c.op_as("ut", "trilu", &["xt"], vec![]);
        c.out("u").out("u1").out("l").out("lm1").out("ut");
        v.push(c);
    }
    for dt in NUMERIC {
        let d = dt.name();
        let name = format!("gather_scatter_elements_{d}");
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!(
                "gather_elements of {d} [3, 4] along 0 and -1 (negative indices); scatter_elements along 1 with \
                 none (a repeated index: the last write wins), add and max"
            ),
        );
        let x = gen(dt, &[3, 4], || rng.step(-8.0, 8.0, 1.0));
        c.input("x", &x);
        c.input("i0", &A::ints(Dt::I64, &[2, 4], &[0, 2, -1, 1, 2, 0, 1, -3]));
        c.input("i1", &A::ints(Dt::I64, &[3, 2], &[3, 0, -1, 1, 2, 2]));
        c.op_as("g0", "gather_elements", &["x", "i0"], vec![]);
        c.op_as("g1", "gather_elements", &["x", "i1"], at1("axis", J::Int(-1)));
        c.input("u", &gen(dt, &[3, 2], || rng.step(-8.0, 8.0, 1.0)));
        c.op_as(
            "s_none",
            "scatter_elements",
            &["x", "i1", "u"],
            at1("axis", J::Int(1)),
        );
        c.op_as(
            "s_add",
            "scatter_elements",
            &["x", "i1", "u"],
            vec![("axis", J::Int(1)), ("reduction", s("add"))],
        );
        c.op_as(
            "s_max",
            "scatter_elements",
            &["x", "i1", "u"],
            vec![("axis", J::Int(1)), ("reduction", s("max"))],
        );
        c.out("g0").out("g1").out("s_none").out("s_add").out("s_max");
        v.push(c);
    }
    for dt in NUMERIC {
        let d = dt.name();
        let name = format!("prod_{d}_axes");
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!("prod of {d} [2, 3, 4]: all axes, [1], [-1] keepdims, [] and an empty axis (1)"),
        );
        let from: &[f64] = if dt.is_float() {
            &[-2.0, -1.0, -0.5, 0.5, 1.0, 2.0]
        } else {
            &[-3.0, -1.0, 1.0, 2.0, 3.0]
        };
        let x = gen(dt, &[2, 3, 4], || rng.pick(from));
        c.input("x", &x);
        c.op_as("all", "prod", &["x"], vec![]);
        c.op_as("ax1", "prod", &["x"], at1("axes", ints(&[1])));
        c.op_as(
            "keep",
            "prod",
            &["x"],
            vec![("axes", ints(&[-1])), ("keepdims", J::Bool(true))],
        );
        c.op_as("none", "prod", &["x"], at1("axes", ints(&[])));
        c.input("e", &gen(dt, &[2, 0], || 1.0));
        c.op_as("empty", "prod", &["e"], at1("axes", ints(&[1])));
        c.out("all").out("ax1").out("keep").out("none").out("empty");
        v.push(c);
    }
    {
        let mut c = Case::new("prod_i32_wrap", "the i32 product keeps i32 and wraps on overflow");
        c.input("x", &A::ints(Dt::I32, &[3], &[65536, 65536, 3]));
        c.op_as("p", "prod", &["x"], vec![]);
        c.out("p");
        v.push(c);
    }
    for dt in FLOATS {
        let d = dt.name();
        let mut c = Case::new(
            format!("hardmax_{d}"),
            format!(
                "hardmax of {d} [3, 4] along -1 (ties: the first; a NaN lane: its first NaN) and along 0"
            ),
        );
        let x = A::from_f64(
            dt,
            &[3, 4],
            &[
                1.0,
                3.0,
                3.0,
                -1.0,
                0.5,
                f64::NAN,
                2.0,
                f64::NAN,
                -2.0,
                -0.5,
                -0.25,
                -4.0,
            ],
        );
        c.input("x", &x);
        c.op_as("h", "hardmax", &["x"], vec![]);
        c.op_as("h0", "hardmax", &["x"], at1("axis", J::Int(0)));
        c.out("h").out("h0");
        v.push(c);
    }
    for dt in FLOATS {
        let d = dt.name();
        let name = format!("layer_norm_{d}");
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!("layer_norm of {d} [2, 3, 4] over the last axis with scale and bias, and over axes 1.. without"),
        );
        let x = gen(dt, &[2, 3, 4], || rng.step(-4.0, 4.0, 0.25));
        c.input("x", &x);
        c.input("scale", &gen(dt, &[4], || rng.step(-2.0, 2.0, 0.5)));
        c.input("bias", &gen(dt, &[4], || rng.step(-2.0, 2.0, 0.5)));
        c.op_outs(
            &["y", "mean", "inv"],
            "layer_norm",
            &["x", "scale", "bias"],
            vec![],
        );
        c.op_outs(
            &["y1", "mean1", "inv1"],
            "layer_norm",
            &["x"],
            vec![("axis", J::Int(1)), ("epsilon", J::Num(0.5))],
        );
        c.out("y")
            .out("mean")
            .out("inv")
            .out("y1")
            .out("mean1")
            .out("inv1");
        v.push(c);
    }
    for dt in NUMERIC {
        let d = dt.name();
        let name = format!("einsum_{d}");
        let mut rng = Rng::new(&name);
        let mut c = Case::new(
            &name,
            format!("einsum on {d}: batched matmul bij,bjk->bik, a diagonal ii->i, a transpose ij->ji, a full sum ij->"),
        );
        let a = gen(dt, &[2, 3, 4], || rng.step(-4.0, 4.0, 1.0));
        let b = gen(dt, &[2, 4, 2], || rng.step(-4.0, 4.0, 1.0));
        let sq = gen(dt, &[3, 3], || rng.step(-4.0, 4.0, 1.0));
        c.input("a", &a);
        c.input("b", &b);
        c.input("sq", &sq);
        c.op_as("mm", "einsum", &["a", "b"], at1("equation", s("bij,bjk->bik")));
        c.op_as("diag", "einsum", &["sq"], at1("equation", s("ii->i")));
        c.op_as("tr", "einsum", &["sq"], at1("equation", s("ij->ji")));
        c.op_as("total", "einsum", &["sq"], at1("equation", s("ij->")));
        c.out("mm").out("diag").out("tr").out("total");
        v.push(c);
    }
}

/// Writes the `ops` suite into `root` (`suites/ops` in the repository).
pub fn write_ops_suite(root: &Path) {
    let mut v = Vec::new();
    binary_cases(&mut v);
    compare_cases(&mut v);
    where_cases(&mut v);
    unary_cases(&mut v);
    cast_cases(&mut v);
    inplace_twin_cases(&mut v);
    reduction_cases(&mut v);
    matmul_cases(&mut v);
    view_op_cases(&mut v);
    copy_op_cases(&mut v);
    subtensor_cases(&mut v);
    nn_cases(&mut v);
    onnx_op_cases(&mut v);
    random_cases(&mut v);
    write_suite(
        root,
        &v,
        "# ops suite\n\n\
         Every op of docs/ops.md with every dtype it accepts, on contiguous inputs, on\n\
         strided inputs (made inside the graph from a contiguous input by `transpose` or\n\
         by `create_view` with a negative stride and a step-2 interval) and on broadcast\n\
         inputs. Expected outputs come from a reference interpreter in the generator\n\
         written from numpy's semantics, not from the engine. Random outputs have no\n\
         expected file; their cases check deterministic properties instead.\n\n\
         Generated by `cargo run --example gen_ops_suite -- suites/ops`; do not edit by hand.\n\n",
    );
}
