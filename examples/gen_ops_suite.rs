//! Writes the `ops` suite (see `vigil_testkit::suites::ops`: every op of
//! docs/ops.md with every dtype it accepts, on contiguous, strided and
//! broadcast inputs, with expected outputs from a numpy-semantics reference
//! interpreter, not from the engine).
//!
//! ```text
//! cargo run --example gen_ops_suite -- suites/ops
//! ```

use std::path::PathBuf;

fn main() {
    let root: PathBuf = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| "suites/ops".into());
    vigil_testkit::suites::ops::write_ops_suite(&root);
}
