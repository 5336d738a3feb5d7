//! Patterns the importer folds into one Vigil op: the tanh GELU as PyTorch
//! exports it (eight nodes) becomes one `gelu_tanh` node, in any operand
//! order and with its constants as initializers or Constant nodes; when an
//! intermediate is read elsewhere or a constant differs or is not 0-d, the
//! nodes stay.

use onnx_protobuf::ModelProto;
use vigil_engine::{DType, Tensor};
use vigil_onnx::{import, Options};
use vigil_testkit::onnx::*;

const SQRT_2_OVER_PI: f32 = 0.797_884_6;

/// How the pattern is written.
#[derive(Clone, Copy)]
struct Form {
    /// Constants first in each binary node (`Mul(0.5, x)`), and the final
    /// product as `o · h`.
    swapped: bool,
    /// Constants as `Constant` nodes instead of initializers.
    constant_nodes: bool,
    /// The scale 0.5 as `half`'s value.
    half: f32,
    /// `tanh`'s value is also a graph output.
    tanh_escapes: bool,
    /// Constants of shape [1] instead of 0-d ones.
    rank1: bool,
}

const GPT2: Form = Form {
    swapped: false,
    constant_nodes: false,
    half: 0.5,
    tanh_escapes: false,
    rank1: false,
};

/// GPT-2's GELU over x of shape [2, 6], as torch.onnx exports it.
fn gelu_model(f: Form) -> ModelProto {
    let consts = [
        ("c_half", f.half),
        ("c_three", 3.0),
        ("c_k", 0.044_715),
        ("c_s", SQRT_2_OVER_PI),
        ("c_one", 1.0),
    ];
    let bin = |op: &str, name: &str, a: &str, c: &str, out: &str| {
        let ins = if f.swapped { [c, a] } else { [a, c] };
        node(op, name, &ins, &[out], vec![])
    };
    let mut nodes = Vec::new();
    let mut inits = Vec::new();
    for (name, v) in consts {
        let shape: &[usize] = if f.rank1 { &[1] } else { &[] };
        let t = Tensor::from_vec(shape, vec![v]).unwrap();
        if f.constant_nodes {
            nodes.push(node(
                "Constant",
                &format!("{name}_node"),
                &[],
                &[name],
                vec![("value", A::T(Box::new(tensor(name, &t))))],
            ));
        } else {
            inits.push(tensor(name, &t));
        }
    }
    nodes.extend([
        bin("Mul", "half_x", "x", "c_half", "h"),
        node("Pow", "cube", &["x", "c_three"], &["p"], vec![]),
        bin("Mul", "k_cube", "p", "c_k", "m"),
        bin("Add", "inner", "x", "m", "a"),
        bin("Mul", "scaled", "a", "c_s", "s"),
        node("Tanh", "tanh", &["s"], &["t"], vec![]),
        bin("Add", "one_plus", "t", "c_one", "o"),
        node(
            "Mul",
            "gelu",
            &if f.swapped { ["o", "h"] } else { ["h", "o"] },
            &["y"],
            vec![],
        ),
    ]);
    let mut outputs = vec![value("y", DType::F32, &[2, 6])];
    if f.tanh_escapes {
        outputs.push(value("t", DType::F32, &[2, 6]));
    }
    model(20, nodes, vec![value("x", DType::F32, &[2, 6])], inits, outputs)
}

fn ops(m: &ModelProto) -> Vec<String> {
    let imported = import(&round_trip(m), &Options::default()).unwrap();
    imported.file.nodes.iter().map(|n| n.op.clone()).collect()
}

const XS: [f32; 12] = [
    -12.0, -9.5, -6.0, -3.0, -1.5, -0.25, -0.0, 0.0, 0.5, 1.0, 3.0, 10.0,
];

/// `x/2 · (1 + tanh(u))`, with the model's own f32 constants, in f64.
fn formula(x: f64, half: f64) -> f64 {
    let u = f64::from(SQRT_2_OVER_PI) * (x + f64::from(0.044_715f32) * x.powi(3));
    2.0 * half * x / (1.0 + (-2.0 * u).exp())
}

fn outputs(m: &ModelProto) -> Vec<f64> {
    vals(&run(m, &[("x", f32s(&[2, 6], &XS))])[0].1)
}

#[test]
fn a_tanh_gelu_of_eight_nodes_imports_as_one_node() {
    let forms = [
        GPT2,
        Form {
            swapped: true,
            ..GPT2
        },
        Form {
            constant_nodes: true,
            ..GPT2
        },
    ];
    for f in forms {
        let m = gelu_model(f);
        assert_eq!(ops(&m), ["gelu_tanh"]);
        let want: Vec<f64> = XS.iter().map(|&x| formula(x.into(), 0.5)).collect();
        assert!(close(&outputs(&m), &want), "{:?} != {want:?}", outputs(&m));
    }
}

#[test]
fn a_pattern_with_a_shared_value_or_another_constant_keeps_its_nodes() {
    for (f, half) in [
        (
            Form {
                tanh_escapes: true,
                ..GPT2
            },
            0.5,
        ),
        (Form { half: 0.6, ..GPT2 }, 0.6),
        (Form { rank1: true, ..GPT2 }, 0.5),
    ] {
        let m = gelu_model(f);
        let ops = ops(&m);
        assert!(!ops.contains(&"gelu_tanh".to_string()), "{ops:?}");
        assert_eq!(ops.iter().filter(|o| *o == "tanh").count(), 1, "{ops:?}");
        let want: Vec<f64> = XS.iter().map(|&x| formula(x.into(), half)).collect();
        // The f32 formula's `1 + tanh` cancels for x < 0: compare in
        // absolute terms there.
        let got = outputs(&m);
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{got:?} != {want:?}");
        }
    }
}
