use super::geometry::Taps;
use super::kernel::pass_order;
use super::*;
use crate::assert_cause;
use crate::ops::testutil::{op, run_vec, t};
use crate::ops::window::odometer;
use proptest::prelude::*;

fn resize(attrs: Attrs) -> Resize {
    Resize::from_attrs(&attrs).unwrap()
}

/// Output shape and values of `resize(attrs)` on f64 `x`.
fn apply(attrs: Attrs, shape: &[usize], x: Vec<f64>) -> (Vec<usize>, Vec<f64>) {
    run_vec::<f64>(&resize(attrs), &[t(shape, x)]).unwrap()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "element {i}: {g} vs {w} ({got:?})"
        );
    }
}

#[test]
fn bilinear_half_pixel_2x2_to_4x4() {
    // Rows and columns sample at -0.25, 0.25, 0.75, 1.25: the ends read
    // the edge, the middle mixes 3:1 and 1:3 (ONNX's own example).
    let want = [
        1.0, 1.25, 1.75, 2.0, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3.0, 3.25, 3.75, 4.0,
    ];
    let a = Attrs::new()
        .with("scales", vec![1.0, 1.0, 2.0, 2.0])
        .with("mode", "linear");
    let (shape, got) = apply(a.clone(), &[1, 1, 2, 2], vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(shape, [1, 1, 4, 4]);
    assert_eq!(got, want);
    // f32 and f16 (through f64, rounded once): every value is exact.
    let (_, got) =
        run_vec::<f32>(&resize(a.clone()), &[t(&[1, 1, 2, 2], vec![1f32, 2.0, 3.0, 4.0])]).unwrap();
    assert_eq!(got, want.map(|v| v as f32));
    let x16: Vec<half::f16> = [1.0, 2.0, 3.0, 4.0]
        .iter()
        .map(|&v| half::f16::from_f64(v))
        .collect();
    let (_, got) = run_vec::<half::f16>(&resize(a), &[t(&[1, 1, 2, 2], x16)]).unwrap();
    assert_eq!(got, want.map(half::f16::from_f64));
}

#[test]
fn f32_accumulates_in_f64_and_rounds_once() {
    // Half-pixel 2x: output 1 is 0.75·x₀ + 0.25·x₁, which for 1.1 and
    // -3.3 (as f32) nearly cancels: 2.98e-8 in f64 (ONNX's reference),
    // 5.96e-8 if each f32 product were rounded first.
    let a = Attrs::new().with("scales", vec![2.0]).with("mode", "linear");
    let (a0, a1) = (1.1f32, -3.3f32);
    let (_, y) = run_vec::<f32>(&resize(a), &[t(&[2], vec![a0, a1])]).unwrap();
    assert_eq!(y[1], (0.75 * a0 as f64 + 0.25 * a1 as f64) as f32);
    assert_eq!(y[1], 2.980_232_2e-8);
}

#[test]
fn nearest_modes_round_as_named() {
    // Asymmetric, scale 4 on [10, 20]: coordinates 0, .25, .5, .75, 1,
    // 1.25, 1.5, 1.75; past the last element reads the last.
    let cases = [
        ("round_prefer_floor", [10, 10, 10, 20, 20, 20, 20, 20]),
        ("round_prefer_ceil", [10, 10, 20, 20, 20, 20, 20, 20]),
        ("floor", [10, 10, 10, 10, 20, 20, 20, 20]),
        ("ceil", [10, 20, 20, 20, 20, 20, 20, 20]),
    ];
    for (mode, want) in cases {
        let a = Attrs::new()
            .with("scales", vec![4.0])
            .with("coordinate_transformation_mode", "asymmetric")
            .with("nearest_mode", mode);
        let (_, got) = run_vec::<i32>(&resize(a.clone()), &[t(&[2], vec![10i32, 20])]).unwrap();
        assert_eq!(got, want, "{mode}");
        let (_, got) = run_vec::<u8>(&resize(a), &[t(&[2], vec![10u8, 20])]).unwrap();
        assert_eq!(got, want.map(|v| v as u8), "{mode}");
    }
    // Default half_pixel, 2 → 3: coordinates -1/6, 1/2 (a tie, down),
    // 7/6.
    let a = Attrs::new().with("sizes", vec![3]);
    let (_, got) = run_vec::<i64>(&resize(a.clone()), &[t(&[2], vec![7i64, 9])]).unwrap();
    assert_eq!(got, [7, 7, 9]);
    let (_, got) = run_vec::<bool>(&resize(a), &[t(&[2], vec![true, false])]).unwrap();
    assert_eq!(got, [true, true, false]);
}

#[test]
fn align_corners_keeps_the_corners() {
    let x: Vec<f64> = (0..15).map(|i| ((i * 7) % 11) as f64 - 3.5).collect();
    for mode in ["linear", "cubic", "nearest"] {
        for sizes in [vec![7, 4], vec![2, 9], vec![3, 5]] {
            let a = Attrs::new()
                .with("sizes", sizes.clone())
                .with("mode", mode)
                .with("coordinate_transformation_mode", "align_corners");
            let (shape, y) = apply(a, &[3, 5], x.clone());
            assert_eq!(shape, sizes);
            let (h, w) = (sizes[0], sizes[1]);
            let got = [y[0], y[w - 1], y[(h - 1) * w], y[h * w - 1]];
            assert_close(&got, &[x[0], x[4], x[10], x[14]], 1e-12);
        }
    }
}

#[test]
fn tf_crop_and_resize_extrapolates() {
    // roi [0.5, 1.5] of 4 elements: coordinates 1.5, 3 and 4.5, the
    // last past the end.
    let a = Attrs::new()
        .with("sizes", vec![3])
        .with("mode", "linear")
        .with("coordinate_transformation_mode", "tf_crop_and_resize")
        .with("roi", vec![0.5, 1.5])
        .with("extrapolation_value", -1.0);
    let (_, y) = apply(a.clone(), &[4], vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(y, [2.5, 4.0, -1.0]);
    let (_, y) = run_vec::<i32>(
        &resize(a.with("mode", "nearest")),
        &[t(&[4], vec![1i32, 2, 3, 4])],
    )
    .unwrap();
    // 1.5 rounds down (round_prefer_floor).
    assert_eq!(y, [2, 4, -1]);
    // In 2-D a row outside fills whole; a column outside fills its
    // column. Rows: roi [-0.5, 0.5] of 3 → -1, 0, 1; columns: roi
    // [0, 1] of 2 → 0, 1.
    let a = Attrs::new()
        .with("sizes", vec![3, 2])
        .with("mode", "cubic")
        .with("coordinate_transformation_mode", "tf_crop_and_resize")
        .with("roi", vec![-0.5, 0.0, 0.5, 1.0])
        .with("extrapolation_value", 9.0);
    let (_, y) = apply(a, &[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_close(&y, &[9.0, 9.0, 1.0, 2.0, 3.0, 4.0], 1e-12);
}

#[test]
fn cubic_weights_by_hand() {
    // Asymmetric, scale 2 on [1, 2, 4, 8]: output 1 sits at 0.5 and
    // output 3 at 1.5, with weights -0.09375, 0.59375, 0.59375,
    // -0.09375 (a = -0.75); output 2 sits on element 1.
    let a = Attrs::new()
        .with("scales", vec![2.0])
        .with("mode", "cubic")
        .with("coordinate_transformation_mode", "asymmetric");
    let x = vec![1.0, 2.0, 4.0, 8.0];
    let (_, y) = apply(a.clone(), &[4], x.clone());
    // At 0.5 the neighbour at -1 reads the edge (1).
    assert_close(&y[1..4], &[1.3125, 2.0, 2.71875], 1e-12);
    // exclude_outside drops it and renormalizes: (45/32) / (35/32).
    let (_, y) = apply(a.clone().with("exclude_outside", true), &[4], x.clone());
    assert_close(&y[1..4], &[9.0 / 7.0, 2.0, 2.71875], 1e-12);
    // a = -0.5: weights -0.0625, 0.5625, 0.5625, -0.0625 at 1.5.
    let (_, y) = apply(a.with("cubic_coeff_a", -0.5), &[4], x);
    assert_close(
        &y[3..4],
        &[-0.0625 + 0.5625 * 2.0 + 0.5625 * 4.0 - 0.0625 * 8.0],
        1e-12,
    );
}

#[test]
fn antialias_widens_the_kernel_when_downsampling() {
    // Half-pixel, scale 0.5 on [0, 4, 8, 12]: outputs sit at 0.5 and
    // 2.5. Plain linear reads the two neighbours; antialiased, the
    // kernel spans four with weights 1, 3, 3, 1 (/8).
    let a = Attrs::new().with("scales", vec![0.5]).with("mode", "linear");
    let x = vec![0.0, 4.0, 8.0, 12.0];
    let (_, y) = apply(a.clone(), &[4], x.clone());
    assert_close(&y, &[2.0, 10.0], 1e-12);
    let (_, y) = apply(a.with("antialias", true), &[4], x);
    assert_close(&y, &[2.5, 9.5], 1e-12);
}

#[test]
fn the_gather_pass_runs_on_the_smaller_tensor() {
    // The innermost axis is a gather per element: upsampling, it goes
    // first; downsampling, last.
    let shape = [1, 3, 224, 224];
    for (scale, want) in [(2.0, [1, 0]), (0.5, [0, 1])] {
        let r = resize(
            Attrs::new()
                .with("scales", vec![1.0, 1.0, scale, scale])
                .with("mode", "linear"),
        );
        let axes = r.axes(&shape).unwrap();
        let passes: Vec<(usize, Taps)> = [2, 3].iter().map(|&d| (d, r.taps(&axes[d]))).collect();
        assert_eq!(pass_order(&shape, &passes), want, "scale {scale}");
    }
}

#[test]
fn pytorch_half_pixel_reads_position_zero_for_one_output() {
    // One output: coordinate 0 (half_pixel would give 1.5).
    let a = Attrs::new()
        .with("sizes", vec![1])
        .with("mode", "cubic")
        .with("coordinate_transformation_mode", "pytorch_half_pixel");
    assert_eq!(apply(a.clone(), &[4], vec![5.0, 1.0, 1.0, 1.0]).1, [5.0]);
    let half = a.with("coordinate_transformation_mode", "half_pixel");
    assert_close(&apply(half, &[4], vec![0.0, 0.0, 8.0, 8.0]).1, &[4.0], 1e-12);
}

#[test]
fn layouts_and_identity_axes() {
    // A transposed input gives what its contiguous copy gives.
    let x = t(&[3, 4], (0..12).map(|v| v as f64 * 1.5).collect::<Vec<_>>());
    let xt = x.permute(&[1, 0]).unwrap();
    let a = Attrs::new().with("sizes", vec![7, 2]).with("mode", "cubic");
    let r = resize(a);
    let want = run_vec::<f64>(&r, &[xt.to_contiguous().unwrap()]).unwrap();
    assert_eq!(run_vec::<f64>(&r, &[xt]).unwrap(), want);
    // Scale 1 everywhere copies; an empty output is fine.
    let same = resize(Attrs::new().with("scales", vec![1.0, 1.0]).with("mode", "linear"));
    assert_eq!(
        run_vec::<f64>(&same, std::slice::from_ref(&x)).unwrap().1,
        x.to_f64_vec().unwrap()
    );
    let none = resize(Attrs::new().with("sizes", vec![0, 5]));
    assert_eq!(run_vec::<f64>(&none, &[x]).unwrap(), (vec![0, 5], vec![]));
}

#[test]
fn infer_and_attrs_round_trip() {
    let a = Attrs::new()
        .with("scales", vec![1.0, 2.5])
        .with("mode", "cubic")
        .with("cubic_coeff_a", -0.5)
        .with("antialias", true)
        .with("exclude_outside", true);
    let r = resize(a);
    assert_eq!(Resize::from_attrs(&r.attrs()).unwrap(), r);
    let ty = |s: Vec<i64>| TypeInfo::new(DType::F32, Some(s));
    assert_eq!(
        r.infer(&[ty(vec![3, 5])]).unwrap()[0],
        TypeInfo::known(DType::F32, &[3, 12])
    );
    assert_eq!(r.infer(&[ty(vec![-1, 4])]).unwrap()[0].shape, Some(vec![-1, 10]));
    let s = resize(
        Attrs::new()
            .with("sizes", vec![2, 6])
            .with("roi", vec![0.0, 0.1, 1.0, 0.9]),
    );
    assert_eq!(Resize::from_attrs(&s.attrs()).unwrap(), s);
    assert_eq!(s.infer(&[ty(vec![-1, -1])]).unwrap()[0].shape, Some(vec![2, 6]));
    assert_eq!(
        s.infer(&[TypeInfo::unknown(DType::I8)]).unwrap()[0].shape,
        Some(vec![2, 6])
    );
}

#[test]
fn bad_attrs_and_inputs_are_errors() {
    let err = |a: Attrs| match OpRegistry::builtin().make("resize", &a) {
        Ok(_) => panic!("{a:?} was accepted"),
        Err(e) => e.to_string(),
    };
    let s = || Attrs::new().with("scales", vec![1.0, 2.0]);
    for (a, want) in [
        (Attrs::new(), "needs attr 'sizes' or 'scales'"),
        (
            s().with("mode", "bilinear"),
            "attr 'mode': unknown value 'bilinear'",
        ),
        (
            s().with("coordinate_transformation_mode", "half"),
            "attr 'coordinate_transformation_mode': unknown value 'half'",
        ),
        (
            s().with("nearest_mode", "round"),
            "attr 'nearest_mode': unknown value 'round'",
        ),
        (s().with("mode", 1), "attr 'mode': expected a string"),
        (
            Attrs::new().with("scales", vec![1.0, 0.0]),
            "'scales' must be positive",
        ),
        (
            Attrs::new().with("scales", vec![-2.0]),
            "'scales' must be positive",
        ),
        (
            Attrs::new().with("scales", vec![f64::NAN]),
            "expected a list of finite numbers",
        ),
        (Attrs::new().with("sizes", vec![-2]), "op 'resize': attr 'sizes'"),
        (
            s().with("sizes", vec![1, 2, 3]),
            "'sizes' has 3 values and 'scales' 2",
        ),
        (
            s().with("roi", vec![0.0, 1.0]),
            "'roi' has 2 values, 2 axes need 4",
        ),
        (
            s().with("antialias", true),
            "'antialias' needs mode 'linear' or 'cubic'",
        ),
        (s().with("antialias", 1), "op 'resize': attr 'antialias'"),
        (s().with("scale", 1), "has no attr 'scale'"),
    ] {
        let e = err(a);
        assert!(e.contains(want), "{e}");
    }
    // Ranks and dtypes, at inference and when run.
    let r = op(
        "resize",
        Attrs::new().with("sizes", vec![2, 2]).with("mode", "linear"),
    );
    let e = r.infer(&[TypeInfo::new(DType::F32, Some(vec![4]))]).unwrap_err();
    assert_cause!(e, Attr, "rank 1", "'sizes'", "rank 2");
    let e = run_vec::<f32>(r.as_ref(), &[t(&[4], vec![0f32; 4])]).unwrap_err();
    assert_cause!(e, Attr, "rank 1");
    let e = run_vec::<i32>(r.as_ref(), &[t(&[2, 2], vec![0i32; 4])]).unwrap_err();
    assert_cause!(e, DType, "'linear'");
    let grow = op("resize", Attrs::new().with("sizes", vec![3]));
    let e = run_vec::<f32>(grow.as_ref(), &[t(&[0], Vec::<f32>::new())]).unwrap_err();
    assert_cause!(e, Shape, "axis 0");
}

/// How the proptest picks a transform, mode and the rest.
#[derive(Clone, Debug)]
struct Case {
    shape: Vec<usize>,
    /// Per axis: output extent and scale as the op gets them.
    sizes: Option<Vec<usize>>,
    scales: Option<Vec<f64>>,
    roi: Vec<f64>,
    mode: usize,
    transform: usize,
    antialias: bool,
    exclude: bool,
    a: f64,
}

impl Case {
    fn attrs(&self) -> Attrs {
        let (mode, nearest) = match self.mode {
            m @ 0..=3 => ("nearest", NEAREST[m].0),
            4 => ("linear", "floor"),
            _ => ("cubic", "floor"),
        };
        let mut a = Attrs::new()
            .with("mode", mode)
            .with("coordinate_transformation_mode", TRANSFORMS[self.transform].0)
            .with("roi", self.roi.clone())
            .with("cubic_coeff_a", self.a)
            .with("extrapolation_value", -7.5);
        if mode == "nearest" {
            a = a.with("nearest_mode", nearest);
        } else {
            a = a
                .with("antialias", self.antialias)
                .with("exclude_outside", self.exclude);
        }
        if let Some(s) = &self.sizes {
            a = a.with("sizes", s.clone());
        }
        if let Some(s) = &self.scales {
            a = a.with("scales", s.clone());
        }
        a
    }
}

fn case() -> impl Strategy<Value = Case> {
    let scale = prop::sample::select(vec![0.25, 0.4, 0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0]);
    (1usize..=3)
        .prop_flat_map(move |r| {
            (
                prop::collection::vec(1usize..=5, r),
                prop::collection::vec(1usize..=7, r),
                prop::collection::vec(scale.clone(), r),
                prop::collection::vec((-0.3f64..0.6, 0.4f64..1.4), r),
                0usize..3,
                0usize..6,
                0usize..7,
                any::<bool>(),
                any::<bool>(),
                -1.0f64..-0.3,
            )
        })
        .prop_map(
            |(shape, outs, scales, roi, path, mode, transform, antialias, exclude, a)| {
                let r = shape.len();
                let from_scales: Vec<usize> = shape
                    .iter()
                    .zip(&scales)
                    .map(|(&i, &s)| ((i as f64 * s).floor() as usize).max(1))
                    .collect();
                let (sizes, scales) = match path {
                    // Sizes alone, scales alone (bumped up where floor would
                    // give an empty axis), or both as given.
                    0 => (Some(outs), None),
                    1 => {
                        let s = shape
                            .iter()
                            .zip(&scales)
                            .map(|(&i, &s)| if (i as f64 * s) < 1.0 { 1.0 } else { s })
                            .collect();
                        (None, Some(s))
                    }
                    _ => (Some(from_scales), Some(scales)),
                };
                let roi = (0..2 * r)
                    .map(|k| if k < r { roi[k].0 } else { roi[k - r].1 })
                    .collect();
                Case {
                    shape,
                    sizes,
                    scales,
                    roi,
                    mode,
                    transform,
                    antialias,
                    exclude,
                    a,
                }
            },
        )
}

/// `(input position, weight)` pairs of one output position on one axis.
type Neighbours = Vec<(usize, f64)>;

/// The definition, one output element at a time: each axis maps the
/// output position to a coordinate by ONNX's formula, picks its
/// neighbours and weights, and the element is the sum over every
/// combination of neighbours of the product of their weights times the
/// input there (or the extrapolation value if any axis falls outside).
fn definition(c: &Case, x: &[f64]) -> (Vec<usize>, Vec<f64>) {
    let r = c.shape.len();
    let mut out_shape = Vec::new();
    // Per axis, per output position: None (outside) or (index, weight) pairs.
    let mut per_axis: Vec<Vec<Option<Neighbours>>> = Vec::new();
    for d in 0..r {
        let n = c.shape[d];
        let fin = n as f64;
        let (out, scale) = match (&c.sizes, &c.scales) {
            (Some(s), Some(k)) => (s[d], k[d]),
            (Some(s), None) => (s[d], s[d] as f64 / fin),
            (None, Some(k)) => ((fin * k[d]).floor() as usize, k[d]),
            (None, None) => unreachable!(),
        };
        out_shape.push(out);
        let mut len = scale * fin;
        if (len - out as f64).abs() <= 1e-12 * out as f64 {
            len = out as f64;
        }
        let (b, e) = (c.roi[d], c.roi[r + d]);
        let tf = TRANSFORMS[c.transform].1;
        let identity = tf != Transform::TfHalfPixelForNn
            && out == n
            && scale == 1.0
            && (tf != Transform::TfCropAndResize || (b == 0.0 && e == 1.0));
        let mut axis = Vec::new();
        for o in 0..out {
            let y = o as f64;
            if identity {
                axis.push(Some(vec![(o, 1.0)]));
                continue;
            }
            let xo = match tf {
                Transform::HalfPixel => (y + 0.5) / scale - 0.5,
                Transform::HalfPixelSymmetric => {
                    fin / 2.0 * (1.0 - out as f64 / len) + (y + 0.5) / scale - 0.5
                }
                Transform::PytorchHalfPixel => {
                    if len > 1.0 {
                        (y + 0.5) / scale - 0.5
                    } else {
                        0.0
                    }
                }
                Transform::AlignCorners => {
                    if out == 1 {
                        0.0
                    } else {
                        y * (fin - 1.0) / (len - 1.0)
                    }
                }
                Transform::Asymmetric => y / scale,
                Transform::TfHalfPixelForNn => (y + 0.5) / scale,
                Transform::TfCropAndResize => {
                    if len > 1.0 {
                        y * (e - b) * (fin - 1.0) / (len - 1.0) + b * (fin - 1.0)
                    } else {
                        (b + e) / 2.0 * (fin - 1.0)
                    }
                }
            };
            if tf == Transform::TfCropAndResize && (xo < 0.0 || xo > fin - 1.0) {
                axis.push(None);
                continue;
            }
            let edge = |j: i64| j.clamp(0, n as i64 - 1) as usize;
            if c.mode < 4 {
                let (lo, frac) = (xo.floor(), xo - xo.floor());
                let pick = match NEAREST[c.mode].1 {
                    Nearest::RoundPreferFloor if frac <= 0.5 => lo,
                    Nearest::RoundPreferCeil if frac < 0.5 => lo,
                    Nearest::Floor => lo,
                    _ => xo.ceil(),
                };
                axis.push(Some(vec![(edge(pick as i64), 1.0)]));
                continue;
            }
            // Every position within the (stretched) kernel's reach.
            let (support, cubic) = if c.mode == 5 { (2.0, true) } else { (1.0, false) };
            let s = if c.antialias { scale.min(1.0) } else { 1.0 };
            let k = |dist: f64| {
                let t = dist.abs();
                if !cubic {
                    (1.0 - t).max(0.0)
                } else if t <= 1.0 {
                    (c.a + 2.0) * t.powi(3) - (c.a + 3.0) * t * t + 1.0
                } else if t < 2.0 {
                    c.a * t.powi(3) - 5.0 * c.a * t * t + 8.0 * c.a * t - 4.0 * c.a
                } else {
                    0.0
                }
            };
            let reach = support / s;
            let mut taps: Vec<(i64, f64)> = ((xo - reach).floor() as i64..=(xo + reach).ceil() as i64)
                .map(|j| (j, k((j as f64 - xo) * s)))
                .filter(|&(_, w)| w != 0.0)
                .collect();
            if c.exclude {
                taps.retain(|&(j, _)| j >= 0 && j < n as i64);
            }
            let total: f64 = taps.iter().map(|t| t.1).sum();
            if (c.antialias || c.exclude) && total != 0.0 {
                taps.iter_mut().for_each(|t| t.1 /= total);
            }
            axis.push(Some(taps.into_iter().map(|(j, w)| (edge(j), w)).collect()));
        }
        per_axis.push(axis);
    }
    let total: usize = out_shape.iter().product();
    let mut y = Vec::with_capacity(total);
    let mut idx = vec![0usize; r];
    for _ in 0..total {
        let chosen: Option<Vec<&Neighbours>> = (0..r).map(|d| per_axis[d][idx[d]].as_ref()).collect();
        y.push(match chosen {
            None => -7.5,
            // exclude_outside left an axis no neighbour: all weights 0.
            Some(lists) if lists.iter().any(|l| l.is_empty()) => 0.0,
            Some(lists) => {
                // Sum over the product of the axes' neighbour lists.
                let mut acc = 0.0;
                let mut pick = vec![0usize; r];
                loop {
                    let (mut flat, mut w) = (0usize, 1.0);
                    for d in 0..r {
                        let (j, wd) = lists[d][pick[d]];
                        flat = flat * c.shape[d] + j;
                        w *= wd;
                    }
                    acc += w * x[flat];
                    let mut d = r;
                    loop {
                        if d == 0 {
                            break;
                        }
                        d -= 1;
                        pick[d] += 1;
                        if pick[d] < lists[d].len() {
                            break;
                        }
                        pick[d] = 0;
                    }
                    if pick.iter().all(|&p| p == 0) {
                        break;
                    }
                }
                acc
            }
        });
        odometer(&mut idx, out_shape.iter().copied());
    }
    (out_shape, y)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The separable kernel (tables per axis, one pass per axis) gives
    /// the per-element definition, for every mode, transform and
    /// option, in 1 to 3 axes; nearest on integers gives it exactly.
    #[test]
    fn separable_passes_match_the_definition(c in case()) {
        let n: usize = c.shape.iter().product();
        let x: Vec<f64> = (0..n).map(|i| ((i * 37 + 11) % 23) as f64 * 0.75 - 8.0).collect();
        let (want_shape, want) = definition(&c, &x);
        let r = Resize::from_attrs(&c.attrs()).unwrap();
        let (shape, got) = run_vec::<f64>(&r, &[t(&c.shape, x.clone())]).unwrap();
        prop_assert_eq!(&shape, &want_shape);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            prop_assert!((g - w).abs() <= 1e-9 * (1.0 + w.abs()), "element {}: {} vs {} ({:?})", i, g, w, r);
        }
        if c.mode < 4 {
            let xi: Vec<i32> = x.iter().map(|&v| (v * 4.0) as i32).collect();
            let (_, got) = run_vec::<i32>(&r, &[t(&c.shape, xi)]).unwrap();
            // The extrapolation value -7.5 rounds half to even.
            let want: Vec<i32> = want.iter().map(|&v| if v == -7.5 { -8 } else { (v * 4.0) as i32 }).collect();
            prop_assert_eq!(got, want);
        } else {
            // f32 (whose inputs here are exact) is the f64 result
            // rounded once.
            let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let (_, got32) = run_vec::<f32>(&r, &[t(&c.shape, xf)]).unwrap();
            let once: Vec<f32> = got.iter().map(|&v| v as f32).collect();
            prop_assert_eq!(got32, once);
        }
    }
}
