//! graph.json's `fill` constants: one value over a shape, exact for every
//! dtype, checked before anything is allocated, and written for uniform
//! tensors only.

use vigil_engine::graph::{GraphFile, ValueDecl};
use vigil_engine::{f16, DType, Executor, OpRegistry, Tensor};

/// The value of the graph whose only constant is `decl` (JSON text).
fn load(decl: &str) -> vigil_engine::Result<Tensor> {
    let text =
        format!(r#"{{"format": "vigil-graph/1", "constants": [{decl}], "nodes": [], "outputs": ["c"]}}"#);
    let g = GraphFile::parse(&text)?.to_graph(None, &OpRegistry::builtin())?;
    Ok(Executor::new(&g)?.run(&Default::default())?.outputs.remove(0).1)
}

#[test]
fn fills_repeat_one_exact_value_over_the_shape() {
    let c = load(r#"{"name": "c", "dtype": "f32", "shape": [300, 400], "fill": 0.25}"#).unwrap();
    assert_eq!((c.dtype(), c.shape()), (DType::F32, &[300usize, 400][..]));
    assert!(c.to_array::<f32>().unwrap().iter().all(|&x| x == 0.25));
    assert!(c.is_contiguous(), "a buffer of its own, not a broadcast view");
    // Integers beyond f64's 53 bits stay exact.
    let c = load(r#"{"name": "c", "dtype": "u64", "shape": [3], "fill": 18446744073709551615}"#).unwrap();
    assert!(c.to_array::<u64>().unwrap().iter().all(|&x| x == u64::MAX));
    let c = load(r#"{"name": "c", "dtype": "i64", "shape": [2, 2], "fill": 4611686018427387905}"#).unwrap();
    assert!(c.to_array::<i64>().unwrap().iter().all(|&x| x == (1 << 62) + 1));
    let c = load(r#"{"name": "c", "dtype": "f16", "shape": [5], "fill": "-inf"}"#).unwrap();
    assert!(c
        .to_array::<f16>()
        .unwrap()
        .iter()
        .all(|&x| x == f16::NEG_INFINITY));
    let c = load(r#"{"name": "c", "dtype": "bool", "shape": [], "fill": true}"#).unwrap();
    assert_eq!(
        c.to_array::<bool>().unwrap().iter().copied().collect::<Vec<_>>(),
        [true]
    );
    let c = load(r#"{"name": "c", "dtype": "f64", "shape": [4, 0], "fill": 1}"#).unwrap();
    assert_eq!(c.shape(), &[4, 0]);
}

#[test]
fn bad_fills_are_one_line_errors_naming_the_constant() {
    for (decl, want) in [
        (
            r#"{"name": "c", "shape": [2], "fill": 1}"#,
            "'fill' needs 'dtype'",
        ),
        (
            r#"{"name": "c", "dtype": "f32", "fill": 1}"#,
            "'fill' needs 'shape'",
        ),
        (
            r#"{"name": "c", "dtype": "u8", "shape": [2], "fill": 256}"#,
            "fill is 256, not a u8",
        ),
        (
            r#"{"name": "c", "dtype": "i32", "shape": [2], "fill": [1]}"#,
            "fill is [1], not a i32",
        ),
        (
            r#"{"name": "c", "dtype": "f32", "shape": [2], "fill": 1, "data": [1, 2]}"#,
            "not several",
        ),
        (
            r#"{"name": "c", "dtype": "f32", "shape": [2]}"#,
            "needs 'data', 'npy' or 'fill'",
        ),
        (
            r#"{"name": "c", "dtype": "f64", "shape": [1073741824, 1073741824], "fill": 0}"#,
            "limit",
        ),
    ] {
        let e = load(decl).unwrap_err().to_string();
        assert!(
            e.contains("'c'") && e.contains(want) && !e.contains('\n'),
            "{decl}: {e}"
        );
    }
}

#[test]
fn uniform_tensors_declare_as_fills_and_read_back() {
    let t = Tensor::from_vec(&[70, 1000], vec![-3i16; 70_000]).unwrap();
    let d = ValueDecl::fill_of("c", &t).unwrap().expect("uniform");
    assert_eq!(d.fill, Some(serde_json::json!(-3)));
    let back = load(&serde_json::to_string(&d).unwrap()).unwrap();
    assert_eq!((back.dtype(), back.shape()), (DType::I16, t.shape()));
    assert!(back.to_array::<i16>().unwrap().iter().all(|&x| x == -3));
    // NaN fills as "nan"; 0.0 and -0.0 are different bits, so not uniform.
    let nan = Tensor::from_vec(&[3], vec![f32::NAN; 3]).unwrap();
    assert_eq!(
        ValueDecl::fill_of("n", &nan).unwrap().unwrap().fill,
        Some(serde_json::json!("nan"))
    );
    let zeros = Tensor::from_vec(&[2], vec![0.0f64, -0.0]).unwrap();
    assert!(ValueDecl::fill_of("z", &zeros).unwrap().is_none());
    let empty = Tensor::from_vec(&[0], Vec::<f32>::new()).unwrap();
    assert!(ValueDecl::fill_of("e", &empty).unwrap().is_none());
    // A strided view: its logical elements decide.
    let x = Tensor::from_vec(&[2, 2], vec![1.0f32, 2.0, 1.0, 2.0]).unwrap();
    let col = x.t(None).unwrap();
    assert!(ValueDecl::fill_of("x", &col).unwrap().is_none());
}
