//! Writes this crate's suite: one case per op, each a directory with
//! `graph.json`, `inputs/*.npy` and `expected/*.npy` (computed here by a
//! plain reference implementation, not by the ops under test).
//!
//! `cargo run -p kernel-author --example gen_suite -- examples/kernel-author/suite`

use std::path::Path;

use vigil::prelude::*;

type Tensors = Vec<(String, Tensor)>;

fn write_case(
    dir: &Path,
    graph: &Graph,
    inputs: &Tensors,
    expected: &Tensors,
) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir.join("inputs"))?;
    std::fs::create_dir_all(dir.join("expected"))?;
    std::fs::write(dir.join("graph.json"), graph.to_json()? + "\n")?;
    for (name, t) in inputs {
        t.write_npy(dir.join("inputs").join(format!("{name}.npy")))?;
    }
    for (name, t) in expected {
        t.write_npy(dir.join("expected").join(format!("{name}.npy")))?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "suite".into());
    let out = Path::new(&out);
    let mut registry = vigil::default_registry();
    kernel_author::register(&mut registry);

    // axpy: out = 0.5 * x + (-y). `neg`'s result dies at axpy, so the
    // in-place pass runs axpy_inplace on it.
    let x: Vec<f32> = vec![1.0, -2.0, 3.5, 0.25, -0.5, 4.0];
    let y: Vec<f32> = vec![0.5, 1.5, -1.0, 2.0, 3.0, -4.5];
    let b = GraphBuilder::with_registry("axpy", registry.clone());
    let xs = b.input("x", DType::F32, &[2, 3]);
    let ys = b.input("y", DType::F32, &[2, 3]);
    let ny = b.apply_named("neg_y", "neg", &[&ys], Attrs::new())?.remove(0);
    let o = b
        .apply_named("out", "axpy", &[&xs, &ny], Attrs::new().with("alpha", 0.5))?
        .remove(0);
    let g = b.build(&[&o])?;
    let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| 0.5 * a - b).collect();
    write_case(
        &out.join("axpy"),
        &g,
        &vec![
            ("x".into(), Tensor::from_vec(&[2, 3], x)?),
            ("y".into(), Tensor::from_vec(&[2, 3], y)?),
        ],
        &vec![(o.name().to_string(), Tensor::from_vec(&[2, 3], want)?)],
    )?;

    // fast_softmax over rows of logits.
    let logits: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0, -1.0, 0.0, 0.5, 2.5];
    let b = GraphBuilder::with_registry("fast_softmax", registry);
    let l = b.input("logits", DType::F32, &[2, 4]);
    let p = b
        .apply_named("probs", "fast_softmax", &[&l], Attrs::new())?
        .remove(0);
    let g = b.build(&[&p])?;
    let want: Vec<f32> = logits
        .chunks(4)
        .flat_map(|row| {
            let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let s: f32 = row.iter().map(|v| (v - m).exp()).sum();
            row.iter().map(move |v| (v - m).exp() / s).collect::<Vec<_>>()
        })
        .collect();
    write_case(
        &out.join("fast_softmax"),
        &g,
        &vec![("logits".into(), Tensor::from_vec(&[2, 4], logits)?)],
        &vec![(p.name().to_string(), Tensor::from_vec(&[2, 4], want)?)],
    )?;
    println!("wrote {}", out.display());
    Ok(())
}
