//! `vigil run --isolate`: cases run in worker processes, so an op that
//! aborts, overflows its stack, runs out of memory or never returns costs
//! one error row instead of the run and its report.
//!
//! A worker is the running executable itself (so a kernel author's binary
//! built on [`crate::Cli`] isolates its own ops) started with a hidden
//! subcommand. The parent keeps a small pool of them, reused across cases,
//! and talks to each over its stdin and stdout in JSON lines
//! ([`protocol`]).

pub mod protocol;
mod status;
mod worker;
mod workers;

pub use worker::{serve, WorkerArgs, WORKER_COMMAND};
pub use workers::{Outcome, WorkerPool, WorkerPoolConfig};
