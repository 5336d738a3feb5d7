//! The ai.onnx.ml ops Vigil imports (Binarizer, ArrayFeatureExtractor,
//! TreeEnsemble) and TfIdfVectorizer, on small models built in Rust: what
//! they import to, the values they give, and their refusals.

use onnx_protobuf::{ModelProto, OperatorSetIdProto};
use vigil_engine::{DType, Tensor};
use vigil_onnx::{import, ImportError, Options};
use vigil_testkit::onnx::*;

/// A one-node model; with `ml`, the node is in domain ai.onnx.ml (version
/// `ml`) and the model imports that domain.
fn one_node(
    n: onnx_protobuf::NodeProto,
    ml: Option<i64>,
    inputs: Vec<onnx_protobuf::ValueInfoProto>,
    y: onnx_protobuf::ValueInfoProto,
) -> ModelProto {
    let mut n = n;
    let mut m = model(17, vec![], inputs, vec![], vec![y]);
    if let Some(v) = ml {
        n.domain = "ai.onnx.ml".into();
        let mut o = OperatorSetIdProto::new();
        o.domain = "ai.onnx.ml".into();
        o.version = v;
        m.opset_import.push(o);
    }
    m.graph.as_mut().unwrap().node.push(n);
    m
}

fn ops_of(m: &ModelProto) -> Vec<String> {
    let imported = import(&round_trip(m), &Options::default()).unwrap();
    imported.file.nodes.iter().map(|n| n.op.clone()).collect()
}

fn refusal(m: &ModelProto) -> ImportError {
    import(&round_trip(m), &Options::default()).unwrap_err()
}

#[test]
fn binarizer_is_one_above_the_threshold() {
    let n = node("Binarizer", "bin", &["x"], &["y"], vec![("threshold", A::F(0.5))]);
    let m = one_node(
        n.clone(),
        Some(1),
        vec![value("x", DType::F32, &[5])],
        value("y", DType::F32, &[5]),
    );
    assert_eq!(ops_of(&m), ["gt", "cast"]);
    let x = [-1.0f32, 0.5, 0.75, f32::NAN, 3.0];
    let out = run(&m, &[("x", f32s(&[5], &x))]);
    let want: Vec<f64> = x.iter().map(|&v| if v > 0.5 { 1.0 } else { 0.0 }).collect();
    assert_eq!(vals(&out[0].1), want);
    // The same op type in the default domain is not Binarizer.
    let plain = one_node(
        n,
        None,
        vec![value("x", DType::F32, &[5])],
        value("y", DType::F32, &[5]),
    );
    let e = refusal(&plain);
    assert!(
        matches!(&e, ImportError::UnsupportedOp { node, .. } if node == "bin"),
        "{e}"
    );
}

#[test]
fn array_feature_extractor_picks_columns_of_the_last_axis() {
    let n = node("ArrayFeatureExtractor", "afe", &["x", "i"], &["y"], vec![]);
    let m = one_node(
        n.clone(),
        Some(1),
        vec![value("x", DType::F32, &[2, 3]), value("i", DType::I64, &[1, 2])],
        value("y", DType::F32, &[2, 2]),
    );
    let x = f32s(&[2, 3], &[10., 11., 12., 20., 21., 22.]);
    let i = Tensor::from_vec(&[1, 2], vec![2i64, 0]).unwrap();
    let out = run(&m, &[("x", x), ("i", i.clone())]);
    assert_eq!(out[0].1.shape(), [2, 2]);
    assert_eq!(vals(&out[0].1), [12., 10., 22., 20.]);
    // A 1-D x gives one row.
    let m = one_node(
        n,
        Some(1),
        vec![value("x", DType::F32, &[3]), value("i", DType::I64, &[1, 2])],
        value("y", DType::F32, &[1, 2]),
    );
    let out = run(&m, &[("x", f32s(&[3], &[10., 11., 12.])), ("i", i)]);
    assert_eq!(out[0].1.shape(), [1, 2]);
    assert_eq!(vals(&out[0].1), [12., 10.]);
}

/// One tree over two features: x0 < 2 ? leaf 0 (target 1, w 5) : node 1;
/// node 1: x1 in {7, 9} ? leaf 1 (target 0, w 3) : leaf 2 (target 0, w -1).
fn tree_node(post_transform: i64) -> onnx_protobuf::NodeProto {
    let ints = |v: Vec<i64>| A::Ints(v);
    let floats = |name: &str, v: &[f64]| {
        A::T(Box::new(tensor(
            name,
            &Tensor::from_vec(&[v.len()], v.to_vec()).unwrap(),
        )))
    };
    let modes = Tensor::from_vec(&[2], vec![1u8, 6]).unwrap();
    node(
        "TreeEnsemble",
        "trees",
        &["x"],
        &["y"],
        vec![
            ("nodes_featureids", ints(vec![0, 1])),
            ("nodes_modes", A::T(Box::new(tensor("nodes_modes", &modes)))),
            ("nodes_splits", floats("nodes_splits", &[2.0, f64::NAN])),
            ("nodes_truenodeids", ints(vec![0, 1])),
            ("nodes_falsenodeids", ints(vec![1, 2])),
            ("nodes_trueleafs", ints(vec![1, 1])),
            ("nodes_falseleafs", ints(vec![0, 1])),
            ("leaf_targetids", ints(vec![1, 0, 0])),
            ("leaf_weights", floats("leaf_weights", &[5.0, 3.0, -1.0])),
            (
                "membership_values",
                floats("membership_values", &[7.0, 9.0, f64::NAN]),
            ),
            ("tree_roots", ints(vec![0])),
            ("n_targets", A::I(2)),
            ("aggregate_function", A::I(1)),
            ("post_transform", A::I(post_transform)),
        ],
    )
}

#[test]
fn tree_ensemble_walks_its_tree() {
    let io = || {
        (
            vec![value("x", DType::F64, &[4, 2])],
            value("y", DType::F64, &[4, 2]),
        )
    };
    let (ins, y) = io();
    let m = one_node(tree_node(0), Some(5), ins, y);
    assert_eq!(ops_of(&m), ["tree_ensemble"]);
    let rows = [[1.0, 7.0], [2.0, 7.0], [3.0, 9.0], [3.0, 8.0]];
    let x = Tensor::from_vec(&[4, 2], rows.iter().flatten().copied().collect::<Vec<f64>>()).unwrap();
    let out = run(&m, &[("x", x)]);
    let mut want = Vec::new();
    for [x0, x1] in rows {
        let (w, t) = if x0 < 2.0 {
            (5.0, 1)
        } else if x1 == 7.0 || x1 == 9.0 {
            (3.0, 0)
        } else {
            (-1.0, 0)
        };
        want.extend(if t == 0 { [w, 0.0] } else { [0.0, w] });
    }
    assert_eq!(vals(&out[0].1), want);
    let (ins, y) = io();
    let e = refusal(&one_node(tree_node(2), Some(5), ins, y));
    assert!(
        matches!(&e, ImportError::BadAttr { node, attr, .. } if node == "trees" && attr == "post_transform"),
        "{e}"
    );
}

fn tfidf(pool_strings: bool) -> onnx_protobuf::NodeProto {
    let mut n = node(
        "TfIdfVectorizer",
        "tfidf",
        &["x"],
        &["y"],
        vec![
            ("mode", A::S("TF")),
            ("min_gram_length", A::I(1)),
            ("max_gram_length", A::I(2)),
            ("max_skip_count", A::I(1)),
            ("ngram_counts", A::Ints(vec![0, 2])),
            ("ngram_indexes", A::Ints(vec![0, 1, 2])),
            ("pool_int64s", A::Ints(vec![4, 5, 4, 5])),
        ],
    );
    if pool_strings {
        let mut a = onnx_protobuf::AttributeProto::new();
        a.name = "pool_strings".into();
        a.strings = vec![b"a".to_vec()];
        a.type_ = onnx_protobuf::attribute_proto::AttributeType::STRINGS.into();
        n.attribute.push(a);
    }
    n
}

#[test]
fn tfidf_vectorizer_counts_skip_grams_per_row() {
    let m = one_node(
        tfidf(false),
        None,
        vec![value("x", DType::I32, &[2, 4])],
        value("y", DType::F32, &[2, 3]),
    );
    assert_eq!(ops_of(&m), ["tfidf_vectorizer"]);
    let x = Tensor::from_vec(&[2, 4], vec![4i32, 5, 4, 5, 4, 9, 5, 4]).unwrap();
    let out = run(&m, &[("x", x)]);
    assert_eq!(out[0].1.shape(), [2, 3]);
    // Row 0, 4 5 4 5: two 4s, two 5s; (4, 5) adjacent twice (positions 0
    // and 3, two items apart, are past max_skip_count 1).
    // Row 1, 4 9 5 4: two 4s, one 5; (4, 5) with one item skipped, once.
    assert_eq!(vals(&out[0].1), [2., 2., 2., 2., 1., 1.]);
    let e = refusal(&one_node(
        tfidf(true),
        None,
        vec![value("x", DType::I32, &[2, 4])],
        value("y", DType::F32, &[2, 3]),
    ));
    assert!(
        matches!(&e, ImportError::BadAttr { node, attr, .. } if node == "tfidf" && attr == "pool_strings"),
        "{e}"
    );
}
