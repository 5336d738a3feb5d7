//! A sample written as a case directory `vigil debug` and `vigil run`
//! take: `graph.json` and `inputs/NAME.npy`. An input that is a view (a
//! transposed, reversed, broadcast or offset one) keeps its layout: its
//! `.npy` holds the whole buffer (1-D, guard bands included) and
//! `inputs/NAME.layout.json` the view's `shape`, `strides` and `offset` in
//! elements (docs/graph-format.md), so the case reproduces the sample
//! exactly.

use std::collections::HashMap;
use std::path::Path;

use serde_json::json;
use vigil_engine::graph::Graph;
use vigil_engine::Layout;
use vigil_engine::Tensor;

use crate::error::Result;

/// Writes `g` and `feeds` to `dir`.
pub fn write(dir: &Path, g: &Graph, feeds: &HashMap<String, Tensor>) -> Result<()> {
    let io = |e: std::io::Error| vigil_engine::Error::File {
        path: dir.to_path_buf(),
        msg: e.to_string(),
    };
    std::fs::create_dir_all(dir.join("inputs")).map_err(io)?;
    std::fs::write(dir.join("graph.json"), g.to_json()? + "\n").map_err(io)?;
    for (name, t) in feeds {
        let npy = dir.join("inputs").join(format!("{name}.npy"));
        let plain = t.offset() == 0 && t.is_contiguous() && t.data_size() == t.size();
        if plain {
            t.write_npy(npy)?;
            continue;
        }
        let buffer = t.with_layout(Layout::contiguous(&[t.data_size()]))?;
        buffer.write_npy(npy)?;
        let layout = json!({"shape": t.shape(), "strides": t.strides(), "offset": t.offset()});
        std::fs::write(
            dir.join("inputs").join(format!("{name}.layout.json")),
            layout.to_string() + "\n",
        )
        .map_err(io)?;
    }
    Ok(())
}
