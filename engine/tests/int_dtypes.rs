//! The integer dtypes u8 i8 u16 i16 u32 u64 end to end: .npy files,
//! graph.json constants, casts (numpy's values on x86-64), wrapping
//! arithmetic, reductions and the pool's poison pattern.

use std::path::PathBuf;

use vigil_engine::graph::{GraphFile, ValueDecl};
use vigil_engine::tensor::buffer_pool;
use vigil_engine::{Attrs, BufferPolicy, DType, Element, Executor, OpCtx, OpRegistry, Scalar, Tensor};

const INTS: [DType; 6] = [
    DType::U8,
    DType::I8,
    DType::U16,
    DType::I16,
    DType::U32,
    DType::U64,
];

fn vals<T: Element>(t: &Tensor) -> Vec<T> {
    t.to_array::<T>().unwrap().iter().copied().collect()
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-int-dtypes-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(tag)
}

/// Runs the builtin op `name` on `inputs`.
fn op(name: &str, attrs: Attrs, inputs: &[Tensor]) -> vigil_engine::Result<Tensor> {
    let op = OpRegistry::builtin().make(name, &attrs)?;
    Ok(op.compute(inputs, &mut OpCtx::new("n"))?.remove(0))
}

fn t<T: Element>(v: Vec<T>) -> Tensor {
    Tensor::from_vec(&[v.len()], v).unwrap()
}

#[test]
fn dtype_names_sizes_and_kinds() {
    let names: Vec<&str> = INTS.iter().map(|d| d.name()).collect();
    assert_eq!(names, ["u8", "i8", "u16", "i16", "u32", "u64"]);
    let sizes: Vec<usize> = INTS.iter().map(|d| d.size()).collect();
    assert_eq!(sizes, [1, 1, 2, 2, 4, 8]);
    for d in INTS {
        assert_eq!(DType::parse(d.name()), Some(d));
        assert!(d.is_int() && d.is_numeric() && !d.is_float());
        assert_eq!(d.is_unsigned(), d.name().starts_with('u'));
    }
    assert!(!DType::Bool.is_int() && !DType::F32.is_int() && DType::I64.is_int());
}

#[test]
fn npy_files_round_trip_with_numpy_descriptors() {
    let cases = [
        (t(vec![0u8, 7, 255]), "'|u1'"),
        (t(vec![-128i8, 0, 127]), "'|i1'"),
        (t(vec![0u16, 65535, 300]), "'<u2'"),
        (t(vec![-32768i16, 1, 32767]), "'<i2'"),
        (t(vec![0u32, u32::MAX, 70000]), "'<u4'"),
        (t(vec![0u64, u64::MAX, 1 << 63]), "'<u8'"),
    ];
    for (x, descr) in cases {
        let path = scratch(&format!("rt-{}.npy", x.dtype()));
        x.write_npy(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let header = String::from_utf8_lossy(&bytes[..64]);
        assert!(header.contains(descr), "{}: {header}", x.dtype());
        let back = Tensor::read_npy(&path).unwrap();
        assert_eq!(back.dtype(), x.dtype());
        let same =
            vigil_engine::compare::compare(&back, &x, vigil_engine::compare::Tolerance::EXACT).unwrap();
        assert!(same.is_exact(), "{}", x.dtype());
    }
    // u64 above 2^53 survives exactly (no trip through f64).
    let back = Tensor::read_npy(scratch("rt-u64.npy")).unwrap();
    assert_eq!(vals::<u64>(&back), [0, u64::MAX, 1 << 63]);
}

#[test]
fn json_constants_take_exact_integers_in_range() {
    let graph = |dtype: &str, data: &str| {
        format!(
            r#"{{"format": "vigil-graph/1", "constants": [{{"name": "c", "dtype": "{dtype}", "data": {data}}}],
                "nodes": [], "outputs": ["c"]}}"#
        )
    };
    let reg = OpRegistry::builtin();
    let ok = [
        ("u8", "[0, 255]"),
        ("i8", "[-128, 127]"),
        ("u16", "[0, 65535]"),
        ("i16", "[-32768, 32767]"),
        ("u32", "[0, 4294967295]"),
        ("u64", "[0, 18446744073709551615]"),
    ];
    for (dt, data) in ok {
        let g = GraphFile::parse(&graph(dt, data))
            .unwrap()
            .to_graph(None, &reg)
            .unwrap();
        let out = Executor::new(&g)
            .unwrap()
            .run(&Default::default())
            .unwrap()
            .outputs;
        let c = &out[0].1;
        assert_eq!(c.dtype().name(), dt);
        // Written back exactly, u64::MAX included.
        let decl = ValueDecl::inline("c", c).unwrap();
        assert_eq!(
            serde_json::to_string(&decl.data).unwrap().replace(',', ", "),
            data
        );
    }
    for (dt, data) in [
        ("u8", "[256]"),
        ("u8", "[-1]"),
        ("i8", "[128]"),
        ("u16", "[1.5]"),
        ("u64", "[-1]"),
        ("u32", "[\"nan\"]"),
        ("i16", "[true]"),
    ] {
        let e = GraphFile::parse(&graph(dt, data))
            .unwrap()
            .to_graph(None, &reg)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("constant 'c': data[0]") && e.contains(&format!("not a {dt}")),
            "{e}"
        );
    }
}

#[test]
fn float_to_int_casts_give_numpys_values_on_x86_64() {
    // np.array(a).astype(t) for each t, numpy 2 on x86-64: truncation in
    // range; out of range the C conversions' bits (undefined in ONNX).
    let a = t(vec![
        300.7f64,
        -1.5,
        1e10,
        f64::NAN,
        -129.0,
        70000.0,
        1e20,
        -1e20,
        1.8e19,
        2e19,
        f64::INFINITY,
    ]);
    let cast = |d: DType| a.cast(d).unwrap().to_f64_vec().unwrap();
    assert_eq!(
        cast(DType::U8),
        [44.0, 255.0, 0.0, 0.0, 127.0, 112.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(
        cast(DType::I8),
        [44.0, -1.0, 0.0, 0.0, 127.0, 112.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(
        cast(DType::U16),
        [300.0, 65535.0, 0.0, 0.0, 65407.0, 4464.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(
        cast(DType::I16),
        [300.0, -1.0, 0.0, 0.0, -129.0, 4464.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    );
    let h = 2147483648.0;
    assert_eq!(
        cast(DType::U32),
        [
            300.0,
            4294967295.0,
            0.0,
            h,
            4294967167.0,
            70000.0,
            0.0,
            h,
            0.0,
            0.0,
            0.0
        ]
    );
    assert_eq!(
        vals::<u64>(&a.cast(DType::U64).unwrap()),
        [
            300,
            u64::MAX,
            10_000_000_000,
            1 << 63,
            u64::MAX - 128,
            70000,
            0,
            1 << 63,
            18_000_000_000_000_000_000,
            0,
            0
        ]
    );
}

#[test]
fn int_to_int_casts_keep_the_low_bits() {
    // ONNX: "discard higher bits and reinterpret", e.g. 200 (int16) -> -56 (int8).
    let x = t(vec![200i16, -1, 256]);
    assert_eq!(vals::<i8>(&x.cast(DType::I8).unwrap()), [-56, -1, 0]);
    assert_eq!(vals::<u8>(&x.cast(DType::U8).unwrap()), [200, 255, 0]);
    assert_eq!(vals::<u64>(&x.cast(DType::U64).unwrap()), [200, u64::MAX, 256]);
    let big = t(vec![u64::MAX, 1 << 63]);
    assert_eq!(vals::<i64>(&big.cast(DType::I64).unwrap()), [-1, i64::MIN]);
    assert_eq!(vals::<u32>(&big.cast(DType::U32).unwrap()), [u32::MAX, 0]);
    // To floats a u64 rounds once, as numpy's does.
    assert_eq!(
        vals::<f32>(&big.cast(DType::F32).unwrap()),
        [1.8446744e19, 9.223372e18]
    );
    assert_eq!(
        vals::<f64>(&big.cast(DType::F64).unwrap()),
        [1.8446744073709552e19, 9.223372036854776e18]
    );
    assert_eq!(
        vals::<bool>(&t(vec![0u8, 2]).cast(DType::Bool).unwrap()),
        [false, true]
    );
    assert_eq!(
        vals::<u16>(&t(vec![true, false]).cast(DType::U16).unwrap()),
        [1, 0]
    );
}

#[test]
fn arithmetic_wraps_and_division_truncates() {
    let a = t(vec![250u8, 3, 0]);
    let b = t(vec![10u8, 5, 1]);
    assert_eq!(
        vals::<u8>(&op("add", Attrs::new(), &[a.clone(), b.clone()]).unwrap()),
        [4, 8, 1]
    );
    assert_eq!(
        vals::<u8>(&op("sub", Attrs::new(), &[a.clone(), b.clone()]).unwrap()),
        [240, 254, 255]
    );
    assert_eq!(
        vals::<u8>(&op("mul", Attrs::new(), &[a.clone(), b.clone()]).unwrap()),
        [196, 15, 0]
    );
    assert_eq!(
        vals::<u8>(&op("div_trunc", Attrs::new(), &[a, b]).unwrap()),
        [25, 0, 0]
    );
    let i = t(vec![127i8, -128, -7]);
    let one = t(vec![1i8, -1, 2]);
    assert_eq!(
        vals::<i8>(&op("add", Attrs::new(), &[i.clone(), one.clone()]).unwrap()),
        [-128, 127, -5]
    );
    assert_eq!(
        vals::<i8>(&op("div_trunc", Attrs::new(), &[i.clone(), one.clone()]).unwrap()),
        [127, -128, -3]
    );
    assert_eq!(
        vals::<i8>(&op("mod", Attrs::new(), &[i.clone(), one]).unwrap()),
        [0, 0, 1]
    );
    // abs of the signed minimum wraps; unsigned negation wraps (numpy).
    assert_eq!(
        vals::<i8>(&op("abs", Attrs::new(), &[i]).unwrap()),
        [127, -128, 7]
    );
    assert_eq!(
        vals::<u16>(&op("neg", Attrs::new(), &[t(vec![1u16, 0])]).unwrap()),
        [65535, 0]
    );
    let big = t(vec![u64::MAX, 1]);
    assert_eq!(
        vals::<u64>(&op("add", Attrs::new(), &[big.clone(), big]).unwrap()),
        [u64::MAX - 1, 2]
    );
}

#[test]
fn reductions_comparisons_and_float_only_ops() {
    let x = Tensor::from_vec(&[2, 3], vec![200u8, 100, 1, 3, 255, 0]).unwrap();
    let sum = op(
        "sum",
        Attrs::new().with("axes", vec![1i64]),
        std::slice::from_ref(&x),
    )
    .unwrap();
    assert_eq!(
        (sum.dtype(), vals::<u8>(&sum)),
        (DType::U8, vec![45, 2]),
        "u8 sums wrap"
    );
    let max = op("max", Attrs::new(), std::slice::from_ref(&x)).unwrap();
    assert_eq!(vals::<u8>(&max), [255]);
    let am = op(
        "argmax",
        Attrs::new().with("axis", 1i64),
        std::slice::from_ref(&x),
    )
    .unwrap();
    assert_eq!(vals::<i64>(&am), [0, 1]);
    let y = Tensor::from_vec(&[2, 3], vec![-5i16, 7, 0, 9, -9, 1]).unwrap();
    assert_eq!(
        vals::<i16>(&op("min", Attrs::new(), std::slice::from_ref(&y)).unwrap()),
        [-9]
    );
    let gt = op("gt", Attrs::new(), &[y.clone(), Tensor::scalar(Scalar::I16(0))]).unwrap();
    assert_eq!(vals::<bool>(&gt), [false, true, false, true, false, true]);
    // Float-only ops refuse integers with a one-line error, never a panic.
    for name in ["exp", "sqrt", "mean"] {
        let e = op(name, Attrs::new(), std::slice::from_ref(&x))
            .unwrap_err()
            .to_string();
        assert!(e.contains(name) && e.contains("u8") && !e.contains('\n'), "{e}");
    }
}

#[test]
fn poisoned_buffers_hold_0x5a_bytes() {
    const N: usize = 8192; // above the pool's one-page minimum
    let _g = buffer_pool::with_policy(BufferPolicy::Poison);
    assert!(buffer_pool::take::<u8>(N)[..N].iter().all(|&x| x == 0x5A));
    assert!(buffer_pool::take::<i8>(N)[..N].iter().all(|&x| x == 0x5A));
    assert!(buffer_pool::take::<u16>(N)[..N].iter().all(|&x| x == 0x5A5A));
    assert!(buffer_pool::take::<i16>(N)[..N].iter().all(|&x| x == 0x5A5A));
    assert!(buffer_pool::take::<u32>(N)[..N].iter().all(|&x| x == 0x5A5A_5A5A));
    assert!(buffer_pool::take::<u64>(N)[..N]
        .iter()
        .all(|&x| x == 0x5A5A_5A5A_5A5A_5A5A));
    for d in INTS {
        let s = vigil_engine::tensor::storage::Storage::uninit(d, 3);
        s.with_bytes(|b| assert!(b.iter().all(|&x| x == 0x5A), "{d}"))
            .unwrap();
    }
}
