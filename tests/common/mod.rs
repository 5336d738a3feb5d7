//! Running the `vigil` binary from the end-to-end tests.

#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs `vigil args...` in the repository root.
pub fn vigil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run vigil")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
