use super::planar::*;
use super::reduce::*;
use super::*;
use proptest::prelude::*;

fn axis() -> impl Strategy<Value = (usize, usize, usize, usize, usize, usize)> {
    (0usize..8, 1usize..4, 1usize..4, 1usize..3, 0usize..3, 0usize..3)
}

/// A stride-1 axis: input 0..12 (also narrower than the kernel) or
/// 17..40 (wider than one vector of f32 on each side of the edges),
/// kernel 2..=5, dilation 1 or 2, pads up to the kernel each side.
fn stride_one_axis() -> impl Strategy<Value = (usize, usize, usize, usize, usize, usize)> {
    (prop_oneof![0usize..12, 17usize..40], 2usize..6, 1usize..3)
        .prop_flat_map(|(n, k, d)| (Just(n), Just(k), Just(1usize), Just(d), 0..=k, 0..=k))
}

/// Bit equality, any NaN matching only a NaN with the same bits.
fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits())
}

/// The pool of `spec` (input, kernel, stride, dilation, pad begin, pad
/// end per axis) with `ceil_mode`, or `None` when it has no valid shape.
fn resolve(spec: &[(usize, usize, usize, usize, usize, usize)], ceil: bool) -> Option<(Vec<Axis1>, usize)> {
    let win = Window {
        strides: spec.iter().map(|a| a.2).collect(),
        dilations: spec.iter().map(|a| a.3).collect(),
        pads: spec.iter().map(|a| a.4).chain(spec.iter().map(|a| a.5)).collect(),
        ceil_mode: ceil,
        ..Window::default()
    };
    let input: Vec<usize> = spec.iter().map(|a| a.0).collect();
    let kernel: Vec<usize> = spec.iter().map(|a| a.1).collect();
    let axes = win.resolve("pool", &input, &kernel).ok()?;
    Some((axes, kernel.iter().product()))
}

/// The run-time vector path ([`PlaneOp`]) against the baseline build of
/// the same walk: max and both averages bit for bit (no operation is
/// reordered between them), a NaN average matching any NaN (which of
/// two NaNs a sum carries is up to the instruction's operand order),
/// the averages with `avg` (floats). Without
/// AVX2 and FMA both are the baseline.
fn paths_agree<T: Num>(x: &[T], axes: &[Axis1], avg: bool) -> std::result::Result<(), String> {
    let o = x.len() / axes.iter().map(|a| a.input).product::<usize>().max(1)
        * axes.iter().map(|a| a.output).product::<usize>();
    let bits = |v: &[T]| bytemuck::cast_slice::<T, u8>(v).to_vec();
    let (mut wide, mut base) = (vec![T::one(); o], vec![T::zero(); o]);
    max_reduce::<T>().planes_on(x, &mut wide, axes, true).unwrap();
    max_reduce::<T>().planes_on(x, &mut base, axes, false).unwrap();
    if bits(&wide) != bits(&base) {
        return Err(format!("max paths {axes:?}: {wide:?} vs {base:?}"));
    }
    let counts = padded_counts(axes);
    for c in [None, Some(&counts[..])].into_iter().filter(|_| avg) {
        let (mut wide, mut base) = (vec![T::one(); o], vec![T::zero(); o]);
        average_reduce::<T>(c)
            .planes_on(x, &mut wide, axes, true)
            .unwrap();
        average_reduce::<T>(c)
            .planes_on(x, &mut base, axes, false)
            .unwrap();
        let same = |(p, q): (&T, &T)| bits(&[*p]) == bits(&[*q]) || (is_nan(*p) && is_nan(*q));
        if !wide.iter().zip(&base).all(same) {
            return Err(format!("avg paths {c:?} {axes:?}: {wide:?} vs {base:?}"));
        }
    }
    Ok(())
}

/// The average pools of the planar walk against the gather table's (the
/// reference step `+`, taps in row-major order). The planar walk sums
/// each kernel row first, so sums may round differently: outputs must
/// agree within 4 ULP per kernel tap of the mean of the taps' magnitudes
/// (the bound on reordered summation, over the same divisor), NaN with
/// any NaN, infinities exactly.
fn averages_agree<T: Float>(
    x: &[T],
    axes: &[Axis1],
    taps: usize,
    eps: f64,
) -> std::result::Result<(), String> {
    let o = x.len() / axes.iter().map(|a| a.input).product::<usize>().max(1)
        * axes.iter().map(|a| a.output).product::<usize>();
    let counts = padded_counts(axes);
    for c in [None, Some(&counts[..])] {
        let (mut fast, mut general, mut scale) = (vec![T::one(); o], vec![T::zero(); o], vec![T::zero(); o]);
        average_reduce::<T>(c).planes(x, &mut fast, axes).unwrap();
        let avg = Reduce {
            init: T::zero(),
            step: |s: T, v: T| s + v,
            finish: Finish::Mean { padded: c },
        };
        avg.table(x, &mut general, axes).unwrap();
        let abs = Reduce {
            init: T::zero(),
            step: |s: T, v: T| s + <T as Num>::abs(v),
            finish: Finish::Mean { padded: c },
        };
        abs.table(x, &mut scale, axes).unwrap();
        for i in 0..o {
            let f = <T as crate::dtype::Element>::to_f64;
            let (p, q, m) = (f(fast[i]), f(general[i]), f(scale[i]));
            let ok = (p.is_nan() && q.is_nan())
                || p == q
                || (p.is_finite() && q.is_finite() && (p - q).abs() <= 4.0 * eps * taps as f64 * m);
            if !ok {
                return Err(format!("avg {c:?} {axes:?} at {i}: {p:e} vs {q:e} (scale {m:e})"));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The planar walk gives what the gather table gives with the
    /// reference steps ([`Num::maximum`], `+`): max bit for bit (NaN,
    /// -inf, NaN with its sign bit set, and ±0 among the inputs), both
    /// averages within reordered summation's rounding (see
    /// [`averages_agree`]), with strides, dilations, pads and ceil_mode,
    /// in 1-D and 2-D.
    #[test]
    fn planar_pools_match_the_gather_table(
        h in axis(),
        w in axis(),
        ceil in any::<bool>(),
        planes in 1usize..3,
        specials in prop::collection::vec((any::<prop::sample::Index>(), 0usize..5), 0..4),
    ) {
        for spec in [vec![w], vec![h, w]] {
            let Some((axes, taps)) = resolve(&spec, ceil) else { continue };
            let n = planes * spec.iter().map(|a| a.0).product::<usize>();
            let o = planes * axes.iter().map(|a| a.output).product::<usize>();
            let mut x: Vec<f64> = (0..n).map(|i| (((i * 7919) % 101) as f64 - 50.0) * 0.37).collect();
            for (at, kind) in &specials {
                if n > 0 {
                    x[at.index(n)] = [f64::NAN, -f64::NAN, f64::NEG_INFINITY, 0.0, -0.0][*kind];
                }
            }
            let max = Reduce { init: <f64 as Num>::min_value(), step: <f64 as Num>::maximum, finish: Finish::Max };
            let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
            max_reduce::<f64>().planes(&x, &mut fast, &axes).unwrap();
            max.table(&x, &mut general, &axes).unwrap();
            prop_assert!(same_bits(&fast, &general), "max {:?}: {:?} vs {:?}", axes, fast, general);
            if let Err(e) = averages_agree(&x, &axes, taps, f64::EPSILON) {
                prop_assert!(false, "{}", e);
            }
            if let Err(e) = paths_agree(&x, &axes, true) {
                prop_assert!(false, "{}", e);
            }
        }
    }

    /// Stride-1 windows (kernels 2 to 5, dilation 1 and 2, pads up to
    /// the kernel, ceil_mode, planes narrower than the kernel) in f32,
    /// with ties, ±0, ±inf and NaNs of both signs among the inputs: max
    /// bit for bit, integer max exactly, averages as above.
    #[test]
    fn stride_one_pools_match_the_gather_table(
        h in stride_one_axis(),
        w in stride_one_axis(),
        ceil in any::<bool>(),
        planes in 1usize..3,
        vals in prop::collection::vec(-100f32..100f32, 1..40),
        specials in prop::collection::vec((any::<prop::sample::Index>(), 0usize..6), 0..5),
    ) {
        for spec in [vec![w], vec![h, w]] {
            let Some((axes, taps)) = resolve(&spec, ceil) else { continue };
            let n = planes * spec.iter().map(|a| a.0).product::<usize>();
            let o = planes * axes.iter().map(|a| a.output).product::<usize>();
            let mut x: Vec<f32> = (0..n).map(|i| vals[i % vals.len()]).collect();
            for (at, kind) in &specials {
                if n > 0 {
                    x[at.index(n)] = [f32::NAN, -f32::NAN, f32::NEG_INFINITY, f32::INFINITY, 0.0, -0.0][*kind];
                }
            }
            let max = Reduce { init: <f32 as Num>::min_value(), step: <f32 as Num>::maximum, finish: Finish::Max };
            let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
            max_reduce::<f32>().planes(&x, &mut fast, &axes).unwrap();
            max.table(&x, &mut general, &axes).unwrap();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&fast), bits(&general), "max {:?}", axes);
            let xi: Vec<i32> = x.iter().map(|&f| if f.is_nan() { 7 } else { f.clamp(-1e9, 1e9) as i32 }).collect();
            let imax = Reduce { init: <i32 as Num>::min_value(), step: <i32 as Num>::maximum, finish: Finish::Max };
            let (mut ifast, mut igeneral) = (vec![1; o], vec![2; o]);
            max_reduce::<i32>().planes(&xi, &mut ifast, &axes).unwrap();
            imax.table(&xi, &mut igeneral, &axes).unwrap();
            prop_assert_eq!(ifast, igeneral, "int max {:?}", axes);
            if let Err(e) = averages_agree(&x, &axes, taps, f32::EPSILON as f64) {
                prop_assert!(false, "{}", e);
            }
            for e in [paths_agree(&x, &axes, true), paths_agree(&xi, &axes, false)] {
                if let Err(e) = e {
                    prop_assert!(false, "{}", e);
                }
            }
        }
    }

    /// Integer max pools agree with the table too (no NaN to carry).
    #[test]
    fn integer_max_pools_match_the_gather_table(h in axis(), w in axis(), ceil in any::<bool>()) {
        let win = Window {
            strides: vec![h.2, w.2],
            dilations: vec![h.3, w.3],
            pads: vec![h.4, w.4, h.5, w.5],
            ceil_mode: ceil,
            ..Window::default()
        };
        let Ok(axes) = win.resolve("pool", &[h.0, w.0], &[h.1, w.1]) else { return Ok(()) };
        let x: Vec<i64> = (0..h.0 * w.0).map(|i| ((i * 7919) % 101) as i64 - 50).collect();
        let o = axes.iter().map(|a| a.output).product::<usize>();
        let reference = Reduce { init: <i64 as Num>::min_value(), step: <i64 as Num>::maximum, finish: Finish::Max };
        let (mut fast, mut general) = (vec![1; o], vec![2; o]);
        max_reduce::<i64>().planes(&x, &mut fast, &axes).unwrap();
        reference.table(&x, &mut general, &axes).unwrap();
        prop_assert_eq!(fast, general);
    }
}

/// Planes taller than one of [`planar_flat`]'s blocks: the blocks'
/// shared input rows, their middle and edge output rows, column
/// strides of 2 and 3, and strided rows (the ring walk) for
/// comparison; max (with NaN of both signs and inf) bit for bit,
/// averages within rounding, and the vector path as the baseline.
///
/// [`planar_flat`]: Reduce::planar_flat
#[test]
fn tall_planes_fold_in_blocks() {
    // An odd width splits strided rows row by row, an even one as a
    // block (stride 2).
    for width in [23, 24] {
        assert!(BLOCK / width < 150);
        for (kh, sh, dh, ph, kw, sw, dw, pw) in [
            (3, 1, 1, 1, 3, 1, 1, 1),
            (3, 2, 1, 1, 3, 1, 1, 1),
            (5, 1, 2, 2, 5, 1, 2, 2),
            (2, 1, 1, 0, 2, 1, 1, 0),
            (7, 1, 1, 3, 3, 1, 2, 2),
            (3, 3, 1, 0, 4, 1, 1, 1),
            (1, 1, 1, 0, 3, 1, 1, 0),
            (3, 2, 1, 1, 3, 2, 1, 1),
            (2, 2, 1, 0, 2, 2, 1, 0),
            (4, 3, 1, 2, 5, 3, 2, 3),
        ] {
            let spec = [(301, kh, sh, dh, ph, ph), (width, kw, sw, dw, pw, pw)];
            let (axes, taps) = resolve(&spec, false).unwrap();
            let n = 2 * 301 * width;
            let o = 2 * axes.iter().map(|a| a.output).product::<usize>();
            let mut x: Vec<f32> = (0..n)
                .map(|i| ((i * 7919) % 1009) as f32 * 0.173 - 80.0)
                .collect();
            let max = Reduce {
                init: <f32 as Num>::min_value(),
                step: <f32 as Num>::maximum,
                finish: Finish::Max,
            };
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            for specials in [false, true] {
                if specials {
                    x[2000] = f32::NAN;
                    x[4700] = -f32::NAN;
                    x[9000] = f32::INFINITY;
                    x[n - 5] = -0.0;
                }
                let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
                max_reduce::<f32>().planes(&x, &mut fast, &axes).unwrap();
                max.table(&x, &mut general, &axes).unwrap();
                assert_eq!(bits(&fast), bits(&general), "max {axes:?}");
                averages_agree(&x, &axes, taps, f32::EPSILON as f64).unwrap();
                paths_agree(&x, &axes, true).unwrap();
            }
        }
    }
}

/// A single NaN (of either sign) at every position of a small plane in
/// turn, also where only an edge window or only a later tap reads it
/// or where no window reads it: the max pools that learn of NaN while
/// folding (see [`Reduce::plane`]) match the gather table bit for bit,
/// with stride-1 and strided rows, and the vector path the baseline.
#[test]
fn every_nan_position_is_seen() {
    for (kh, sh, ph, kw, sw, dw, pw) in [
        (3, 1, 1, 3, 1, 1, 1),
        (2, 1, 0, 2, 1, 1, 0),
        (3, 1, 0, 3, 1, 1, 0),
        (2, 1, 2, 2, 1, 1, 2),
        (3, 1, 1, 5, 1, 2, 1),
        (1, 1, 0, 4, 1, 1, 3),
        (3, 2, 1, 3, 2, 1, 1),
        (2, 2, 0, 2, 2, 1, 0),
        (3, 2, 0, 3, 3, 1, 0),
    ] {
        // Width 21: the middle windows are wider than one vector of f32;
        // 22: stride-2 rows split as a block.
        for width in [9, 21, 22] {
            let spec = [(6, kh, sh, 1, ph, ph), (width, kw, sw, dw, pw, pw)];
            let (axes, _) = resolve(&spec, false).unwrap();
            let n = 6 * width;
            let o = axes.iter().map(|a| a.output).product::<usize>();
            let max = Reduce {
                init: <f32 as Num>::min_value(),
                step: <f32 as Num>::maximum,
                finish: Finish::Max,
            };
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            for at in 0..n {
                for nan in [f32::NAN, -f32::NAN] {
                    let mut x: Vec<f32> = (0..n).map(|i| ((i * 37) % 23) as f32 - 11.0).collect();
                    x[at] = nan;
                    let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
                    max_reduce::<f32>().planes(&x, &mut fast, &axes).unwrap();
                    max.table(&x, &mut general, &axes).unwrap();
                    assert_eq!(bits(&fast), bits(&general), "max {axes:?} NaN at {at}");
                    paths_agree(&x, &axes, false).unwrap();
                }
            }
        }
    }
}

/// A wide plane: the ring of row results wraps many times, and the
/// middle windows run as slices (the proptests' planes are small).
#[test]
fn wide_planes_match_the_gather_table() {
    for (k, s, d, p, even) in [
        (3, 1, 1, 1, 0),
        (3, 2, 1, 1, 0),
        (3, 2, 1, 1, 1),
        (2, 2, 1, 0, 0),
        (2, 2, 1, 0, 1),
        (3, 2, 2, 2, 1),
        (5, 1, 2, 2, 0),
        (4, 3, 1, 2, 0),
        (4, 3, 1, 2, 1),
        (7, 1, 1, 3, 0),
    ] {
        // Width 41 splits strided rows row by row, 42 as a block
        // (strides 2 and 3).
        let width = 41 + even;
        let spec = [(37, k, s, d, p, p), (width, k, s, d, p, p)];
        let (axes, taps) = resolve(&spec, false).unwrap();
        let n = 2 * 37 * width;
        let o = 2 * axes.iter().map(|a| a.output).product::<usize>();
        let mut x: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 1009) as f32 * 0.173 - 80.0)
            .collect();
        x[500] = f32::NAN;
        x[900] = -f32::NAN;
        x[1700] = f32::INFINITY;
        let max = Reduce {
            init: <f32 as Num>::min_value(),
            step: <f32 as Num>::maximum,
            finish: Finish::Max,
        };
        let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
        max_reduce::<f32>().planes(&x, &mut fast, &axes).unwrap();
        max.table(&x, &mut general, &axes).unwrap();
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fast), bits(&general), "max {axes:?}");
        averages_agree(&x, &axes, taps, f32::EPSILON as f64).unwrap();
        paths_agree(&x, &axes, true).unwrap();
        let xd: Vec<f64> = x.iter().map(|&v| v as f64 * 1.1).collect();
        paths_agree(&xd, &axes, true).unwrap();
    }
}

/// A global pool over a zero-size spatial axis: the average is NaN (the
/// mean of nothing, as `reduce_mean`), the max a shape error in `infer`
/// and `compute` (as `reduce_max`); neither overflows.
#[test]
fn global_pools_over_a_zero_size_spatial_axis() {
    let global = |kind| Pool {
        kind,
        window: Window::default(),
        global: true,
        indices: None,
    };
    let avg = global(PoolKind::Average {
        count_include_pad: false,
    });
    let max = global(PoolKind::Max);
    for shape in [vec![1, 1, 0], vec![2, 3, 4, 0]] {
        let ty = TypeInfo::known(DType::F32, &shape);
        let mut want = shape[..2].to_vec();
        want.extend(std::iter::repeat_n(1, shape.len() - 2));
        assert_eq!(
            avg.infer(std::slice::from_ref(&ty)).unwrap()[0],
            TypeInfo::known(DType::F32, &want)
        );
        let x = Tensor::zeros(DType::F32, &shape).unwrap();
        let y = avg
            .compute(std::slice::from_ref(&x), &mut OpCtx::new("n"))
            .unwrap();
        assert_eq!(y[0].shape(), &want[..]);
        assert!(y[0].to_f64_vec().unwrap().iter().all(|v| v.is_nan()));
        let e = max.infer(&[ty]).unwrap_err();
        assert!(matches!(e, crate::error::Error::Shape(_)), "{e}");
        let e = max.compute(&[x], &mut OpCtx::new("n")).unwrap_err();
        assert!(matches!(e, crate::error::Error::Shape(_)), "{e}");
    }
    // Zero-size batch or channels with a non-empty window give an empty output.
    let x = Tensor::zeros(DType::F32, &[0, 2, 3]).unwrap();
    assert_eq!(
        max.compute(&[x], &mut OpCtx::new("n")).unwrap()[0].shape(),
        &[0, 2, 1]
    );
}

/// The plain definition of max pool indices: each window's taps in
/// row-major order, the first strictly greatest one inside the input
/// winning, numbered `p·plane + position` (row- or column-major).
fn reference_indices(x: &[i32], planes: usize, axes: &[Axis1], column_major: bool) -> Vec<i64> {
    let dims: Vec<usize> = axes.iter().map(|a| a.input).collect();
    let plane: usize = dims.iter().product();
    let outs: Vec<usize> = axes.iter().map(|a| a.output).collect();
    let kernel: Vec<usize> = axes.iter().map(|a| a.kernel).collect();
    let odometer = |i: usize, shape: &[usize]| -> Vec<usize> {
        let mut rest = i;
        let mut c = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            c[d] = rest % shape[d];
            rest /= shape[d];
        }
        c
    };
    let mut idx = Vec::new();
    for p in 0..planes {
        for o in 0..outs.iter().product() {
            let oc = odometer(o, &outs);
            let mut best: Option<(i32, usize)> = None;
            for k in 0..kernel.iter().product() {
                let kc = odometer(k, &kernel);
                let at: Vec<i64> = (0..axes.len())
                    .map(|d| axes[d].start(oc[d]) + (kc[d] * axes[d].dilation) as i64)
                    .collect();
                if at.iter().zip(&dims).any(|(&c, &n)| c < 0 || c >= n as i64) {
                    continue;
                }
                let at: Vec<usize> = at.iter().map(|&c| c as usize).collect();
                let row = (0..at.len()).fold(0, |acc, d| acc * dims[d] + at[d]);
                let pos = if column_major {
                    (0..at.len()).rev().fold(0, |acc, d| acc * dims[d] + at[d])
                } else {
                    row
                };
                let v = x[p * plane + row];
                if best.is_none_or(|(b, _)| v > b) {
                    best = Some((v, pos));
                }
            }
            idx.push(best.map_or(-1, |(_, pos)| (p * plane + pos) as i64));
        }
    }
    idx
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Indices from 1, 2 and 3 spatial axes in both storage orders, on
    /// values with many ties (the first tap of the greatest value wins),
    /// against the plain definition; the values are those of the
    /// one-output op.
    #[test]
    fn max_pool_indices_match_the_definition(
        spec in prop::collection::vec(axis(), 1..4),
        ceil in any::<bool>(),
        column_major in any::<bool>(),
        planes in 1usize..4,
        seed in any::<u64>(),
    ) {
        let Some((axes, _)) = resolve(&spec, ceil) else { return Ok(()) };
        let plane: usize = axes.iter().map(|a| a.input).product();
        let mut shape = vec![1, planes];
        shape.extend(axes.iter().map(|a| a.input));
        let mut state = seed;
        let x: Vec<i32> = (0..planes * plane)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((state >> 33) % 4) as i32
            })
            .collect();
        let attrs = Attrs::new()
            .with("kernel_shape", spec.iter().map(|a| a.1 as i64).collect::<Vec<_>>())
            .with("strides", spec.iter().map(|a| a.2 as i64).collect::<Vec<_>>())
            .with("dilations", spec.iter().map(|a| a.3 as i64).collect::<Vec<_>>())
            .with("pads", spec.iter().map(|a| a.4 as i64).chain(spec.iter().map(|a| a.5 as i64)).collect::<Vec<_>>())
            .with("ceil_mode", i64::from(ceil));
        let one = OpRegistry::builtin().make("max_pool", &attrs).unwrap();
        let two = OpRegistry::builtin()
            .make("max_pool", &attrs.clone().with("indices", true).with("storage_order", i64::from(column_major)))
            .unwrap();
        let xt = Tensor::from_vec(&shape, x.clone()).unwrap();
        let want = one.compute(std::slice::from_ref(&xt), &mut OpCtx::new("n")).unwrap();
        let got = two.compute(&[xt], &mut OpCtx::new("n")).unwrap();
        prop_assert_eq!(got.len(), 2);
        prop_assert_eq!(got[0].to_f64_vec().unwrap(), want[0].to_f64_vec().unwrap());
        prop_assert_eq!(got[1].shape(), got[0].shape());
        let idx = i64s(&got[1]);
        prop_assert_eq!(idx, reference_indices(&x, planes, &axes, column_major));
    }
}

/// An i64 tensor's elements in C order.
fn i64s(t: &Tensor) -> Vec<i64> {
    t.to_array::<i64>().unwrap().iter().copied().collect()
}

#[test]
fn max_pool_indices_take_the_nan_and_read_strided_inputs() {
    let make = |order: i64| {
        let a = Attrs::new()
            .with("kernel_shape", vec![2, 2])
            .with("indices", true)
            .with("storage_order", order);
        OpRegistry::builtin().make("max_pool", &a).unwrap()
    };
    // A NaN wins its window (the value is NaN), and its index says where.
    let x = Tensor::from_vec(&[1, 1, 2, 3], vec![1.0f32, 5.0, 2.0, f32::NAN, 0.0, 7.0]).unwrap();
    let o = make(0).compute(&[x], &mut OpCtx::new("n")).unwrap();
    assert!(o[0].to_f64_vec().unwrap()[0].is_nan());
    assert_eq!(i64s(&o[1]), [3, 5]);
    // A transposed view [1, 1, 3, 2] of [1, 1, 2, 3]: indices in its own
    // (logical) numbering, column-major with storage_order 1.
    let base = Tensor::from_vec(&[1, 1, 2, 3], vec![1i64, 9, 2, 8, 3, 4]).unwrap();
    let x = base.permute(&[0, 1, 3, 2]).unwrap(); // [[1, 8], [9, 3], [2, 4]]
    let o = make(0)
        .compute(std::slice::from_ref(&x), &mut OpCtx::new("n"))
        .unwrap();
    assert_eq!(o[0].to_f64_vec().unwrap(), [9.0, 9.0]);
    assert_eq!(i64s(&o[1]), [2, 2]);
    let o = make(1).compute(&[x], &mut OpCtx::new("n")).unwrap();
    assert_eq!(i64s(&o[1]), [1, 1]);
    // An attr that is neither order is refused.
    let bad = Attrs::new()
        .with("kernel_shape", vec![2])
        .with("storage_order", 2);
    assert!(matches!(
        OpRegistry::builtin().make("max_pool", &bad),
        Err(crate::error::Error::Attr(_))
    ));
}
