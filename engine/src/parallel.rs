//! Intra-op parallelism: large matmuls (faer) and long elementwise math
//! kernels split their work across the rayon pool they are called from:
//! the global pool, or inside `vigil run` the `--jobs N` pool its cases run
//! on, so cases and kernels never oversubscribe the cores: a kernel called
//! from a busy pool just runs its pieces on the threads that are free.
//! Small ops stay on the calling thread (see [`PARALLEL_MACS`] and
//! [`PARALLEL_ELEMS`]). A base module: the tensor layer's copies and
//! fills split too, so it depends on nothing else in the crate.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns intra-op parallelism on or off for the whole process (on by
/// default). Results do not depend on it: every element is computed by the
/// same kernel either way.
pub fn set_intra_op(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

/// Whether kernels may split work across the rayon pool right now.
pub fn intra_op() -> bool {
    ENABLED.load(Ordering::Relaxed) && rayon::current_num_threads() > 1
}

/// Slices at least this long are split across the rayon pool (shared with
/// `vigil run --jobs` and the matmul kernel); shorter ones stay on the
/// calling thread.
pub const PARALLEL_ELEMS: usize = 1 << 16;

/// Products with at least this many multiply-adds run on the rayon pool
/// (shared with `vigil run --jobs`); smaller ones stay on the calling thread,
/// where the fork-join would cost more than it saves.
pub const PARALLEL_MACS: usize = 1 << 21;

/// Elements per task of a memory-bound pass over a long slice (comparing,
/// summarizing, zeroing): large enough that a task's overhead vanishes,
/// small enough that both cores get work.
pub const PASS_CHUNK: usize = 1 << 16;

/// Whether a pass over `len` elements should split across the rayon pool:
/// long enough (see [`PARALLEL_ELEMS`]) and intra-op parallelism on.
pub fn split(len: usize) -> bool {
    len >= PARALLEL_ELEMS && intra_op()
}

/// Makes the calling thread worker 0 of the global rayon pool, as a case of
/// `vigil run` runs on a worker of its pool: a graph run on this thread
/// then splits its large ops over it and one more thread per other core.
/// Left outside, the thread waits while one pool worker per core runs the
/// parts, and its serial work between splits competes with them: a thread
/// more than cores (measured: `--mode validate` on the MLP step 1.13x-1.41x
/// of plain that way, 1.24x-1.31x in the pool). Call it first thing on the
/// thread that runs graphs; it does nothing once the global pool exists.
///
/// With one thread (one core, or `RAYON_NUM_THREADS=1`) the pool keeps its
/// own worker: a pool made only of this thread would never run work another
/// thread hands it.
pub fn join_global_pool() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(cores);
    if threads >= 2 {
        // An error means the global pool exists already; it stays as it is.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .use_current_thread()
            .build_global();
    }
}

/// Keeps the other workers of the calling thread's rayon pool busy-polling
/// for work while a graph runs, as onnxruntime's pool spins between the ops
/// of a run. A worker that finds no work for a few dozen rounds goes to
/// sleep, and waking it costs more than a short op's whole parallel part on
/// a virtual machine (measured: 2-thread runs of one conv bimodal, median no
/// faster than one thread); a polling worker picks the next op's pieces up
/// at once. Only a run on a pool worker keeps the others awake (a `vigil`
/// run, where [`join_global_pool`] made the main thread worker 0): a caller
/// outside the pool, as tests are, leaves it to sleep as before. The pollers
/// stop when the value is dropped. Results do not change: the same pieces
/// run, on whichever thread takes them.
///
/// A loop of runs (`vigil bench`, `Trainer::fit`) holds one across its
/// runs too, so the workers do not fall asleep between two runs and wake
/// late for the next one's first ops: a worker asleep for a millisecond
/// took over 300 µs to take a forked task on the Zen 5 VM, 21 µs after a
/// short sleep, 0.8 µs while polling. Each run's own pollers then start
/// inside the loop's, and return when the run ends.
pub struct KeepAwake {
    state: Option<Arc<Awake>>,
}

struct Awake {
    /// Cleared when the run ends; pollers return then.
    running: AtomicBool,
    /// Pollers spawned and not yet returned.
    polling: AtomicUsize,
    /// How many other workers to keep awake.
    want: usize,
    /// The worker running the graph: a poller that lands on it returns at
    /// once (it would otherwise spin on the thread it is meant to serve).
    owner: usize,
}

impl KeepAwake {
    /// Starts pollers on the calling thread's pool, if it is a worker of a
    /// pool of two threads or more and intra-op parallelism is on.
    pub fn start() -> KeepAwake {
        match rayon::current_thread_index() {
            Some(owner) if intra_op() => KeepAwake::polling(owner, rayon::current_num_threads() - 1),
            _ => KeepAwake { state: None },
        }
    }

    /// `want` pollers for the run of worker `owner`.
    fn polling(owner: usize, want: usize) -> KeepAwake {
        let k = KeepAwake {
            state: Some(Arc::new(Awake {
                running: AtomicBool::new(true),
                polling: AtomicUsize::new(0),
                want,
                owner,
            })),
        };
        k.rearm();
        k
    }

    /// Spawns pollers again where some returned (one that landed on the
    /// owner, which takes its own queue's jobs while it waits in a join).
    /// Cheap when all are polling: one atomic load.
    pub fn rearm(&self) {
        let Some(s) = &self.state else { return };
        while s.polling.load(Ordering::Acquire) < s.want {
            s.polling.fetch_add(1, Ordering::AcqRel);
            let s = Arc::clone(s);
            rayon::spawn(move || poll(&s));
        }
    }
}

impl Drop for KeepAwake {
    fn drop(&mut self) {
        if let Some(s) = &self.state {
            s.running.store(false, Ordering::Release);
        }
    }
}

/// Runs the pool's pending jobs as they come until the run ends.
fn poll(s: &Awake) {
    if rayon::current_thread_index() != Some(s.owner) {
        while s.running.load(Ordering::Acquire) {
            if rayon::yield_now() != Some(rayon::Yield::Executed) {
                std::hint::spin_loop();
            }
        }
    }
    s.polling.fetch_sub(1, Ordering::AcqRel);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Whether `what` holds within ten seconds.
    fn within(what: impl Fn() -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if what() {
                return true;
            }
            std::thread::yield_now();
        }
        what()
    }

    #[test]
    fn forked_work_runs_beside_a_poller_and_pollers_stop_when_dropped() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a pool");
        let (stolen, stopped) = pool.install(|| {
            let owner = rayon::current_thread_index().expect("a worker");
            let awake = KeepAwake::polling(owner, 1);
            let state = Arc::clone(awake.state.as_ref().expect("pollers"));
            // The first half waits for the second: it can only finish if
            // the other worker, polling, takes the second half.
            let ran = AtomicBool::new(false);
            let (waited, other) = rayon::join(
                || within(|| ran.load(Ordering::Acquire)),
                || {
                    ran.store(true, Ordering::Release);
                    rayon::current_thread_index()
                },
            );
            let stolen = waited && other.is_some_and(|t| t != owner);
            drop(awake);
            (stolen, within(|| state.polling.load(Ordering::Acquire) == 0))
        });
        assert!(stolen, "the other worker ran the forked half");
        assert!(stopped, "the pollers returned once the run ended");
    }

    #[test]
    fn a_run_outside_any_pool_keeps_no_worker_awake() {
        // Test threads are not rayon workers.
        assert!(KeepAwake::start().state.is_none());
    }
}
