//! The parent's side: a pool of worker processes, each running one case at
//! a time. A worker that dies or runs past the timeout is reaped (killed
//! first if need be), its case becomes an error row, and the next case
//! that needs a worker starts a fresh one.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use vigil_reports::Case;

use super::protocol::{Job, Reply, MARKER};
use super::status;
use super::worker::WORKER_COMMAND;

/// How workers are started and how long a case may take.
#[derive(Clone, Debug)]
pub struct WorkerPoolConfig {
    /// The workers' `--max-alloc` (the parent's own limit).
    pub max_alloc: u64,
    /// Each worker's address-space limit in bytes (`--worker-mem`).
    pub worker_mem: Option<u64>,
    /// A case still running after this is stopped by killing its worker.
    pub timeout: Option<Duration>,
}

/// What became of one case.
pub enum Outcome {
    /// Its row: the worker's result, or an error row naming how the worker
    /// died or that it timed out.
    Done(Case),
    /// Its worker died of SIGINT (Ctrl-C reaches the whole process group):
    /// the case did not finish and has no row.
    Interrupted,
}

/// Workers waiting for a case; at most as many exist as cases run at once.
pub struct WorkerPool {
    exe: PathBuf,
    cfg: WorkerPoolConfig,
    idle: Mutex<Vec<Worker>>,
}

impl WorkerPool {
    /// A pool of workers running this very executable.
    pub fn new(cfg: WorkerPoolConfig) -> Result<WorkerPool> {
        let exe = std::env::current_exe().context("--isolate: cannot find the running executable")?;
        Ok(WorkerPool {
            exe,
            cfg,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// Runs `job` in a worker. Never fails: whatever goes wrong is the
    /// case's error row.
    pub fn run(&self, job: &Job) -> Outcome {
        let started = Instant::now();
        let errored = |why: String| {
            Outcome::Done(
                Case::new(job.case().name(), job.path.clone())
                    .errored(why)
                    .with_duration_ms(started.elapsed().as_millis() as u64),
            )
        };
        let mut worker = match self.send(job) {
            Ok(w) => w,
            Err(e) => return errored(format!("cannot start a worker: {}", crate::one_line(&e))),
        };
        let wait = match self.cfg.timeout {
            Some(t) => worker.replies.recv_timeout(t),
            None => worker.replies.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match wait {
            Ok(line) => match serde_json::from_str::<Reply>(&line) {
                Ok(Reply::Case(case)) => {
                    self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(worker);
                    Outcome::Done(*case)
                }
                Ok(Reply::Refused(why)) => errored(format!("the worker refused the case: {why}")),
                Err(e) => errored(format!("the worker's reply cannot be read: {e}")),
            },
            Err(RecvTimeoutError::Timeout) => {
                worker.reap(true);
                let t = self.cfg.timeout.unwrap_or_default().as_secs_f64();
                errored(format!(
                    "timed out after {t} s (--timeout); its worker was killed"
                ))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let (status, last) = worker.reap(false);
                match status {
                    Some(s) if status::interrupted(s) => Outcome::Interrupted,
                    Some(s) => errored(status::describe(s, last.as_deref())),
                    None => errored("the worker's exit status cannot be read".into()),
                }
            }
        }
    }

    /// An idle worker (or a new one) that has taken `job`. An idle worker
    /// that died since its last case (the OOM killer picks its victims
    /// when it likes) is replaced once.
    fn send(&self, job: &Job) -> Result<Worker> {
        let line = serde_json::to_string(job)?;
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        if let Some(mut w) = idle {
            if w.send(&line).is_ok() {
                return Ok(w);
            }
            w.reap(true);
        }
        let mut w = Worker::spawn(&self.exe, &self.cfg)?;
        w.send(&line).context("the new worker does not read its input")?;
        Ok(w)
    }
}

/// One worker process and the threads reading its output.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    /// Protocol lines from its stdout, marker removed; closed when the
    /// worker's stdout is.
    replies: Receiver<String>,
    /// The last line the worker wrote to stderr during the current case,
    /// backtraces left out.
    last_stderr: Arc<Mutex<Option<String>>>,
    stderr_reader: Option<JoinHandle<()>>,
}

impl Worker {
    fn spawn(exe: &std::path::Path, cfg: &WorkerPoolConfig) -> Result<Worker> {
        let mut cmd = Command::new(exe);
        cmd.arg("--max-alloc")
            .arg(cfg.max_alloc.to_string())
            .arg(WORKER_COMMAND);
        if let Some(m) = cfg.worker_mem {
            cmd.arg("--mem").arg(m.to_string());
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| exe.display().to_string())?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("no pipes to the worker");
        };
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            // What an op prints to stdout is not protocol: pass it on.
            for_each_line(stdout, |line| match line.strip_prefix(MARKER) {
                Some(reply) => tx.send(reply.to_string()).is_ok(),
                None => {
                    if !line.is_empty() {
                        eprintln!("{line}");
                    }
                    true
                }
            })
        });
        let last_stderr = Arc::new(Mutex::new(None));
        let last = last_stderr.clone();
        let stderr_reader = std::thread::spawn(move || {
            for_each_line(stderr, |line| {
                eprintln!("{line}");
                if !line.trim().is_empty() && !backtrace_line(line) {
                    *last.lock().unwrap_or_else(|p| p.into_inner()) = Some(line.to_string());
                }
                true
            })
        });
        Ok(Worker {
            child,
            stdin,
            replies,
            last_stderr,
            stderr_reader: Some(stderr_reader),
        })
    }

    fn send(&mut self, line: &str) -> std::io::Result<()> {
        *self.last_stderr.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.write_all(b"\n")?;
        self.stdin.flush()
    }

    /// Waits for the worker to end (killing it first when `kill`), and
    /// returns its exit status and the last line it wrote to stderr.
    fn reap(&mut self, kill: bool) -> (Option<ExitStatus>, Option<String>) {
        if kill {
            let _ = self.child.kill();
        }
        let status = self.child.wait().ok();
        // The stderr pipe is closed now: its reader has seen every line.
        if let Some(h) = self.stderr_reader.take() {
            let _ = h.join();
        }
        let last = self.last_stderr.lock().unwrap_or_else(|p| p.into_inner()).take();
        (status, last)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True for the lines of a backtrace (`RUST_BACKTRACE`) and its notes,
/// which follow the line that says what went wrong.
fn backtrace_line(line: &str) -> bool {
    line.starts_with(char::is_whitespace)
        || line.starts_with("stack backtrace:")
        || line.starts_with("note: ")
        // What the allocation-failure hook adds under RUST_BACKTRACE after
        // its "memory allocation of N bytes failed".
        || line.starts_with("skipping backtrace printing")
}

/// Calls `f` on each line of `r` (lossily decoded, without its newline)
/// until the end of input, a read error, or `f` returning false.
fn for_each_line(r: impl Read, mut f: impl FnMut(&str) -> bool) {
    let mut r = BufReader::new(r);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf);
                if !f(line.trim_end_matches(['\n', '\r'])) {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::backtrace_line;

    /// The line a crash is described by must be the cause, not the
    /// backtrace (or its absence) that RUST_BACKTRACE adds after it.
    #[test]
    fn backtrace_lines_are_not_the_cause() {
        for l in [
            "stack backtrace:",
            "   0: __rustc::rust_begin_unwind",
            "note: Some details are omitted",
            "skipping backtrace printing to avoid potential recursion",
        ] {
            assert!(backtrace_line(l), "{l}");
        }
        assert!(!backtrace_line("memory allocation of 1099511627776 bytes failed"));
    }
}
