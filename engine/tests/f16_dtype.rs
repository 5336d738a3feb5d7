//! The f16 dtype (IEEE binary16) end to end: .npy files against the bytes
//! numpy writes, graph.json constants, casts (numpy 2.4's values on
//! x86-64, with rounding to nearest even, overflow, subnormals and NaN),
//! ops computed in f32 and rounded once, comparison and the pool's poison.
//!
//! Expected bit patterns come from numpy (`np.float16`), written here as
//! numbers so the tests need no Python.

use vigil_engine::compare::{compare, ulp_distance, Tolerance};
use vigil_engine::graph::{GraphFile, ValueDecl};
use vigil_engine::tensor::buffer_pool;
use vigil_engine::{
    f16, Attrs, BufferPolicy, DType, Element, Error, Executor, NpyError, OpCtx, OpRegistry, Tensor,
};

fn h(bits: u16) -> f16 {
    f16::from_bits(bits)
}

fn bits(t: &Tensor) -> Vec<u16> {
    t.to_array::<f16>().unwrap().iter().map(|x| x.to_bits()).collect()
}

fn vals<T: Element>(t: &Tensor) -> Vec<T> {
    t.to_array::<T>().unwrap().iter().copied().collect()
}

fn halves(shape: &[usize], b: &[u16]) -> Tensor {
    Tensor::from_vec(shape, b.iter().map(|&b| h(b)).collect()).unwrap()
}

/// The value of the graph whose only constant is `decl` (JSON text).
fn load(decl: &str) -> Tensor {
    let text =
        format!(r#"{{"format": "vigil-graph/1", "constants": [{decl}], "nodes": [], "outputs": ["c"]}}"#);
    let g = GraphFile::parse(&text)
        .unwrap()
        .to_graph(None, &OpRegistry::builtin())
        .unwrap();
    Executor::new(&g)
        .unwrap()
        .run(&Default::default())
        .unwrap()
        .outputs
        .remove(0)
        .1
}

/// Runs the builtin op `name` on `inputs`.
fn op(name: &str, attrs: Attrs, inputs: &[Tensor]) -> vigil_engine::Result<Tensor> {
    let op = OpRegistry::builtin().make(name, &attrs)?;
    Ok(op.compute(inputs, &mut OpCtx::new("n"))?.remove(0))
}

/// `np.save` of `np.array([[1, -2.5, 65504], [inf, 6e-8, -0.0]], np.float16)`.
fn numpy_c_order() -> Vec<u8> {
    let mut b = b"\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }".to_vec();
    b.resize(127, b' ');
    b.push(b'\n');
    b.extend_from_slice(b"\x00<\x00\xc1\xff{\x00|\x01\x00\x00\x80");
    b
}

/// `np.save` of a Fortran-order big-endian `[[1.5, 2], [3, -4]]` (`>f2`).
fn numpy_fortran_big_endian() -> Vec<u8> {
    let mut b = b"\x93NUMPY\x01\x00v\x00{'descr': '>f2', 'fortran_order': True, 'shape': (2, 2), }".to_vec();
    b.resize(127, b' ');
    b.push(b'\n');
    b.extend_from_slice(b">\x00B\x00@\x00\xc4\x00");
    b
}

#[test]
fn dtype_name_size_and_kind() {
    assert_eq!((DType::F16.name(), DType::F16.size()), ("f16", 2));
    assert_eq!(DType::parse("f16"), Some(DType::F16));
    assert!(DType::F16.is_float() && DType::F16.is_numeric() && !DType::F16.is_int());
    assert!(DType::ALL.contains(&DType::F16));
    assert_eq!(DType::F16.fmt_value(0.1), "0.1", "printed at f16 precision");
}

#[test]
fn npy_reads_numpy_bytes_and_writes_them_back() {
    let t = Tensor::read_npy_bytes(&numpy_c_order(), "x.npy").unwrap();
    assert_eq!((t.dtype(), t.shape()), (DType::F16, &[2usize, 3][..]));
    assert_eq!(bits(&t), [0x3c00, 0xc100, 0x7bff, 0x7c00, 0x0001, 0x8000]);
    let dir = tempfile_dir("npy");
    let path = dir.join("x.npy");
    t.write_npy(&path).unwrap();
    // numpy's data bytes after a header of the same length and descriptor
    // (ndarray-npy leaves out the dict's trailing comma).
    let (written, numpy) = (std::fs::read(&path).unwrap(), numpy_c_order());
    assert_eq!(written.len(), numpy.len());
    assert_eq!(written[128..], numpy[128..]);
    assert!(String::from_utf8_lossy(&written[..128]).contains("'descr': '<f2'"));
    assert_eq!(bits(&Tensor::read_npy(&path).unwrap()), bits(&t));

    // Big-endian, Fortran order: the logical values, in C order.
    let f = Tensor::read_npy_bytes(&numpy_fortran_big_endian(), "f.npy").unwrap();
    assert_eq!(f.shape(), &[2, 2]);
    assert_eq!(f.to_f64_vec().unwrap(), [1.5, 2.0, 3.0, -4.0]);

    // A truncated f16 file is an error naming the file, not a panic.
    let short = &numpy_c_order()[..130];
    let e = Tensor::read_npy_bytes(short, "short.npy").unwrap_err();
    assert!(
        matches!(&e, Error::Npy { path, source: NpyError::Truncated(_) } if path.as_os_str() == "short.npy"),
        "{e:?}"
    );
    assert!(e.to_string().contains("2 bytes"), "{e}");
}

fn tempfile_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-f16-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn json_constants_round_trip_every_f16_exactly() {
    // Every finite f16 and the infinities, written inline and read back.
    let all: Vec<f16> = (0..=u16::MAX).map(h).filter(|x| !x.is_nan()).collect();
    let t = Tensor::from_vec(&[all.len()], all.clone()).unwrap();
    let decl = ValueDecl::inline("c", &t).unwrap();
    let c = load(&serde_json::to_string(&decl).unwrap());
    assert_eq!(c.dtype(), DType::F16);
    assert_eq!(bits(&c), all.iter().map(|x| x.to_bits()).collect::<Vec<_>>());

    // Literals round to nearest f16; "nan" and "inf" are taken.
    let c = load(r#"{"name": "c", "dtype": "f16", "data": [0.1, 65520, "nan", "-inf", 1e-8]}"#);
    let b = bits(&c);
    assert_eq!((b[0], b[1], b[3], b[4]), (0x2e66, 0x7c00, 0xfc00, 0x0000));
    assert!(h(b[2]).is_nan());
}

/// numpy: `np.array(V, np.float64).astype(np.float16)` for these values
/// (the same from float32 where the value is one).
const TO_F16: [(f64, u16); 16] = [
    (0.1, 0x2e66),
    (1.0 / 3.0, 0x3555),
    (65504.0, 0x7bff),
    (65520.0, 0x7c00), // halfway to the next binade: rounds up to inf
    (65519.99, 0x7bff),
    (1e5, 0x7c00),
    (-1e5, 0xfc00),
    (5.960464477539063e-08, 0x0001),                 // the smallest subnormal
    (2.980232238769531e-08, 0x0000),                 // half of it: a tie, to even (0)
    (f64::from_bits(0x3e60_0000_0000_0001), 0x0001), // one f64 ULP above the tie
    (1e-8, 0x0000),
    (f64::NEG_INFINITY, 0xfc00),
    (2049.0, 0x6800),        // tie between 2048 and 2050: to even
    (2051.0, 0x6802),        // tie between 2050 and 2052: to even
    (1.00048828125, 0x3c00), // 1 + 2^-11: a tie, to even (1)
    (1.00146484375, 0x3c02), // 1 + 3 * 2^-11: a tie, to even
];

#[test]
fn casts_to_f16_round_to_nearest_even_overflow_and_keep_subnormals() {
    let src: Vec<f64> = TO_F16.iter().map(|&(v, _)| v).collect();
    let want: Vec<u16> = TO_F16.iter().map(|&(_, b)| b).collect();
    let x64 = Tensor::from_vec(&[src.len()], src.clone()).unwrap();
    assert_eq!(bits(&x64.cast(DType::F16).unwrap()), want, "from f64");
    // From f32: the same, but for the value just above the subnormal tie,
    // whose nearest f32 is the tie itself (to even: 0).
    let x32 = x64.cast(DType::F32).unwrap();
    let mut want32 = want.clone();
    want32[9] = 0;
    assert_eq!(bits(&x32.cast(DType::F16).unwrap()), want32, "from f32");
    // half's own f64 conversion rounds through f32 here and gets 0.
    assert_eq!(
        bits(
            &Tensor::from_vec(&[1], vec![f64::from_bits(0x3e60_0000_0000_0001)])
                .unwrap()
                .cast(DType::F16)
                .unwrap()
        ),
        [1]
    );
    let nan = Tensor::from_vec(&[2], vec![f64::NAN, -f64::NAN])
        .unwrap()
        .cast(DType::F16)
        .unwrap();
    let n = vals::<f16>(&nan);
    assert!(n[0].is_nan() && n[1].is_nan() && n[1].is_sign_negative());
    // Integers: exact up to 2048, then rounded; beyond 65504 inf.
    let ints = Tensor::from_vec(&[4], vec![2049i64, -7, 65519, i64::MAX]).unwrap();
    assert_eq!(
        bits(&ints.cast(DType::F16).unwrap()),
        [0x6800, 0xc700, 0x7bff, 0x7c00]
    );
    let u = Tensor::from_vec(&[2], vec![u64::MAX, 3]).unwrap();
    assert_eq!(bits(&u.cast(DType::F16).unwrap()), [0x7c00, 0x4200]);
    let b = Tensor::from_vec(&[2], vec![true, false]).unwrap();
    assert_eq!(bits(&b.cast(DType::F16).unwrap()), [0x3c00, 0x0000]);
}

#[test]
fn casts_from_f16_follow_numpy() {
    let x = Tensor::from_vec(
        &[10],
        [
            1.5f32,
            -1.5,
            2.5,
            -2.5,
            300.0,
            -300.0,
            65504.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ]
        .iter()
        .map(|&v| f16::from_f32(v))
        .collect(),
    )
    .unwrap();
    let cast = |d: DType| x.cast(d).unwrap();
    assert_eq!(
        vals::<i8>(&cast(DType::I8)),
        [1, -1, 2, -2, 44, -44, -32, 0, 0, 0]
    );
    assert_eq!(
        vals::<u8>(&cast(DType::U8)),
        [1, 255, 2, 254, 44, 212, 224, 0, 0, 0]
    );
    assert_eq!(
        vals::<i16>(&cast(DType::I16)),
        [1, -1, 2, -2, 300, -300, -32, 0, 0, 0]
    );
    assert_eq!(
        vals::<u16>(&cast(DType::U16)),
        [1, 65535, 2, 65534, 300, 65236, 65504, 0, 0, 0]
    );
    let m = i32::MIN;
    assert_eq!(
        vals::<i32>(&cast(DType::I32)),
        [1, -1, 2, -2, 300, -300, 65504, m, m, m]
    );
    assert_eq!(
        vals::<u32>(&cast(DType::U32)),
        [1, u32::MAX, 2, u32::MAX - 1, 300, 4294966996, 65504, 0, 0, 0]
    );
    let m = i64::MIN;
    assert_eq!(
        vals::<i64>(&cast(DType::I64)),
        [1, -1, 2, -2, 300, -300, 65504, m, m, m]
    );
    let top = 1u64 << 63;
    assert_eq!(
        vals::<u64>(&cast(DType::U64)),
        [
            1,
            u64::MAX,
            2,
            u64::MAX - 1,
            300,
            18446744073709551316,
            65504,
            top,
            0,
            top
        ]
    );
    assert!(vals::<bool>(&cast(DType::Bool)).iter().all(|&b| b));
    // Widening is exact, NaN and infinities included.
    let w = vals::<f32>(&cast(DType::F32));
    assert_eq!(&w[..7], &[1.5, -1.5, 2.5, -2.5, 300.0, -300.0, 65504.0]);
    assert!(w[7].is_nan() && w[8] == f32::INFINITY && w[9] == f32::NEG_INFINITY);
    assert_eq!(vals::<f64>(&cast(DType::F64))[6], 65504.0);
}

#[test]
fn elementwise_ops_round_once_per_element() {
    // numpy: a, b = float16([0.1, 0.2, 0.3, 1000, -7]), float16([0.2, 0.1, 0.7, 60000, 3]).
    let a = halves(&[5], &[11878, 12902, 13517, 25552, 50944]);
    let b = halves(&[5], &[12902, 11878, 14746, 31571, 16896]);
    let run = |name: &str| bits(&op(name, Attrs::new(), &[a.clone(), b.clone()]).unwrap());
    assert_eq!(run("add"), [13516, 13516, 15360, 31602, 50176]);
    assert_eq!(
        run("mul"),
        [9502, 9502, 12985, 31744, 52544],
        "1000 * 60000 overflows to inf"
    );
    assert_eq!(run("div"), [14336, 16384, 14043, 9284, 49323]);
    let e = op("exp", Attrs::new(), std::slice::from_ref(&a)).unwrap();
    assert_eq!(bits(&e), [15468, 15587, 15718, 31744, 4984]);
    // A float-only op keeps the dtype; an int-only one refuses it in one line.
    assert_eq!(e.dtype(), DType::F16);
}

#[test]
fn sums_means_and_matmul_accumulate_in_f32() {
    // numpy: np.sum(np.full(4096, 0.1, np.float16)) == 409.5 (bits 24166);
    // summed in f16 steps it would stop growing at 256.
    let x = Tensor::from_vec(&[4096], vec![h(11878); 4096]).unwrap();
    let sum = op("sum", Attrs::new(), std::slice::from_ref(&x)).unwrap();
    assert_eq!((sum.dtype(), bits(&sum)), (DType::F16, vec![24166]));
    let mean = op("mean", Attrs::new(), std::slice::from_ref(&x)).unwrap();
    assert_eq!(bits(&mean), [11878]);
    // m = arange(12).reshape(3, 4) * 0.1, n = arange(8).reshape(4, 2) * 0.3, in float16.
    let m = halves(
        &[3, 4],
        &[
            0, 11878, 12902, 13516, 13926, 14336, 14540, 14745, 14950, 15155, 15360, 15462,
        ],
    );
    let n = halves(&[4, 2], &[0, 13517, 14541, 15156, 15565, 15872, 16180, 16435]);
    let p = op("matmul", Attrs::new(), &[m, n]).unwrap();
    assert_eq!(bits(&p), [15032, 15380, 16527, 16865, 17265, 17628]);
    // Max stays exact in f16.
    let mx = op("max", Attrs::new(), std::slice::from_ref(&x)).unwrap();
    assert_eq!(bits(&mx), [11878]);
}

#[test]
fn softmax_and_layer_norm_keep_the_dtype() {
    let x = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, -1.0, 0.0, 1.0]).unwrap();
    let x16 = x.cast(DType::F16).unwrap();
    for name in ["softmax", "log_softmax"] {
        let want = op(name, Attrs::new(), std::slice::from_ref(&x)).unwrap();
        let got = op(name, Attrs::new(), std::slice::from_ref(&x16)).unwrap();
        assert_eq!(got.dtype(), DType::F16, "{name}");
        let c = compare(&got.cast(DType::F32).unwrap(), &want, Tolerance::new(1e-3, 1e-4)).unwrap();
        assert!(c.is_close(), "{name}: {c:?}");
    }
}

#[test]
fn comparison_default_tolerance_ulps_and_nan() {
    let a = halves(&[3], &[0x7e00, 0x3c00, 0x3c01]);
    let b = halves(&[3], &[0xfe01, 0x3c00, 0x3c00]);
    let c = compare(&a, &b, Tolerance::EXACT).unwrap();
    assert_eq!(
        (c.differing, c.mismatched, c.max_ulp),
        (1, 1, 1),
        "NaN matches NaN"
    );
    let tol = Tolerance::default_for(DType::F16);
    assert!(
        compare(&a, &b, tol).unwrap().is_close(),
        "1 ULP of 1.0 is within f16's default"
    );
    let far = halves(&[3], &[0x7e00, 0x3c00, 0x3c03]);
    assert!(!compare(&far, &b, tol).unwrap().is_close(), "3 ULP of 1.0 is not");
    assert_eq!(ulp_distance(1.0, -1.0, DType::F16), 2 * 0x3c00);
    assert_eq!(ulp_distance(0.0, -0.0, DType::F16), 0);
    assert_eq!(ulp_distance(f64::NAN, 1.0, DType::F16), u64::MAX);
}

#[test]
fn poisoned_f16_buffers_hold_nan() {
    let _g = buffer_pool::with_policy(BufferPolicy::Poison);
    assert!(buffer_pool::take::<f16>(8192)[..8192].iter().all(|x| x.is_nan()));
    let s = vigil_engine::tensor::storage::Storage::uninit(DType::F16, 3);
    s.with_bytes(|b| assert_eq!(b, [0x00, 0x7e, 0x00, 0x7e, 0x00, 0x7e]))
        .unwrap();
}

#[test]
fn ops_that_refuse_f16_say_so_in_one_line() {
    let x = halves(&[2], &[0x3c00, 0x4000]);
    for (name, inputs) in [("not", vec![x.clone()]), ("and", vec![x.clone(), x.clone()])] {
        let e = op(name, Attrs::new(), &inputs).unwrap_err().to_string();
        assert!(
            e.contains(&format!("'{name}'")) && !e.contains('\n'),
            "{name}: {e}"
        );
    }
    // Through a graph: the node and op are named.
    let text = r#"{"format": "vigil-graph/1", "inputs": [{"name": "x", "dtype": "f16", "shape": [2]}],
        "nodes": [{"name": "neg", "op": "not", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]}"#;
    let e = GraphFile::parse(text)
        .unwrap()
        .to_graph(None, &OpRegistry::builtin())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("neg") && e.contains("not") && e.contains("f16") && !e.contains('\n'),
        "{e}"
    );
}

#[test]
fn widened_in_place_ops_write_their_f16_input() {
    // batch_norm_inplace computes in f32 and rounds into x's own buffer.
    let x = Tensor::from_vec(&[1, 2, 2], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let vecs: Vec<Tensor> = [[2.0f32, 0.5], [0.1, -0.1], [1.5, 3.5], [0.25, 1.0]]
        .iter()
        .map(|v| Tensor::from_vec(&[2], v.to_vec()).unwrap())
        .collect();
    let mut f32_in = vec![x.clone()];
    f32_in.extend(vecs.iter().cloned());
    let want = op("batch_norm", Attrs::new(), &f32_in).unwrap();
    let x16 = x.cast(DType::F16).unwrap();
    let mut f16_in = vec![x16.clone()];
    f16_in.extend(vecs.iter().map(|v| v.cast(DType::F16).unwrap()));
    let got = op("batch_norm_inplace", Attrs::new(), &f16_in).unwrap();
    assert!(got.same_buffer(&x16), "the output is x's buffer");
    assert_eq!(got.dtype(), DType::F16);
    let c = compare(
        &x16.cast(DType::F32).unwrap(),
        &want,
        Tolerance::default_for(DType::F16),
    )
    .unwrap();
    assert!(c.is_close(), "{c:?}");
}
