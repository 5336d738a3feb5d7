//! The worker's side: read jobs from stdin, run each case in this process
//! as an in-process `vigil run` would, answer on stdout.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use anyhow::Result;
use vigil_engine::OpRegistry;

use super::protocol::{Job, Reply, MARKER};
use crate::runner::run_case;

/// The hidden subcommand that makes a process a worker.
pub const WORKER_COMMAND: &str = "__worker";

/// The worker's flags, set by the parent.
#[derive(clap::Args)]
pub struct WorkerArgs {
    /// Limit this process's address space to BYTES (RLIMIT_AS), so that an
    /// op allocating without bound fails here, in its own worker, before
    /// the machine's OOM killer has to choose a victim.
    #[arg(long, value_name = "BYTES")]
    mem: Option<u64>,
}

/// Serves jobs until stdin closes. Panics in a case are caught as in an
/// in-process run; anything worse ends this process, which the parent
/// reports as the case's error.
pub fn serve(a: WorkerArgs, registry: &OpRegistry) -> Result<ExitCode> {
    die_with_parent();
    if let Some(bytes) = a.mem {
        limit_memory(bytes)?;
    }
    let out = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Job>(&line)
            .map_err(anyhow::Error::from)
            .and_then(|job| Ok((job.case(), job.config()?)))
        {
            Ok((case, cfg)) => Reply::Case(Box::new(run_case(&case, &cfg, registry))),
            Err(e) => Reply::Refused(crate::one_line(&e)),
        };
        let text = serde_json::to_string(&reply)?;
        // A newline first: an op's print without one must not hide the marker.
        let mut o = out.lock();
        write!(o, "\n{MARKER}{text}\n")?;
        o.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(unix)]
fn limit_memory(bytes: u64) -> Result<()> {
    use nix::sys::resource::{setrlimit, Resource};
    setrlimit(Resource::RLIMIT_AS, bytes, bytes)
        .map_err(|e| anyhow::anyhow!("--worker-mem {bytes}: cannot limit the worker's memory: {e}"))
}

#[cfg(not(unix))]
fn limit_memory(_bytes: u64) -> Result<()> {
    anyhow::bail!("--worker-mem needs a Unix system")
}

/// A worker outlives no parent: should the parent be killed outright, its
/// workers (one may be spinning in a case) get SIGKILL too.
#[cfg(target_os = "linux")]
fn die_with_parent() {
    if let Err(e) = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL) {
        tracing::warn!("worker: cannot ask for a parent-death signal: {e}");
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent() {}
