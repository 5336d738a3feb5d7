//! Test support for `tests/isolate.rs`: the `vigil` command with four more
//! ops, each of which takes its process down in its own way when it runs:
//!
//! | op | what it does |
//! |---|---|
//! | `crash_abort` | `std::process::abort()` (SIGABRT) |
//! | `crash_stack` | recurses until the stack overflows |
//! | `crash_alloc` | allocates (and touches) 64 MiB blocks without bound |
//! | `crash_spin` | never returns |
//! | `crash_segv` | raises SIGSEGV, as a wild pointer in a kernel would |
//!
//! Each takes one f32 tensor and would return it unchanged.

#![forbid(unsafe_code)]

use std::hint::black_box;
use std::sync::Arc;

use vigil::engine::Result;
use vigil::prelude::*;

/// How an op goes down.
#[derive(Clone, Copy)]
enum Crash {
    Abort,
    Stack,
    Alloc,
    Spin,
    Segv,
}

struct CrashOp(Crash, &'static str);

impl Op for CrashOp {
    fn name(&self) -> &str {
        self.1
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        match self.0 {
            Crash::Abort => std::process::abort(),
            Crash::Stack => {
                black_box(recurse(black_box(0)));
            }
            Crash::Alloc => {
                let mut blocks = Vec::new();
                loop {
                    blocks.push(vec![1u8; 64 << 20]);
                    black_box(&blocks);
                }
            }
            Crash::Spin => {
                let mut n = 0u64;
                while black_box(n) != u64::MAX {
                    n = n.wrapping_add(1) % (u64::MAX - 1);
                }
            }
            Crash::Segv => {
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSEGV);
            }
        }
        Ok(vec![inputs[0].deep_copy()?])
    }
}

/// Recurses with a 4 KiB frame until the stack runs out.
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth as u8; 4096]);
    if black_box(depth) == u64::MAX {
        return frame[0] as u64;
    }
    recurse(depth + 1) + u64::from(frame[1])
}

fn register(r: &mut OpRegistry) {
    for (crash, name) in [
        (Crash::Abort, "crash_abort"),
        (Crash::Stack, "crash_stack"),
        (Crash::Alloc, "crash_alloc"),
        (Crash::Spin, "crash_spin"),
        (Crash::Segv, "crash_segv"),
    ] {
        r.register_op(Arc::new(CrashOp(crash, name)));
    }
}

fn main() -> std::process::ExitCode {
    vigil::Cli::new().register(register).main()
}
