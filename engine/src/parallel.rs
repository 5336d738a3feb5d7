//! Intra-op parallelism: large matmuls (faer) and long elementwise math
//! kernels split their work across the rayon pool they are called from:
//! the global pool, or inside `vigil run` the `--jobs N` pool its cases run
//! on, so cases and kernels never oversubscribe the cores: a kernel called
//! from a busy pool just runs its pieces on the threads that are free.
//! Small ops stay on the calling thread (see [`PARALLEL_MACS`] and
//! [`PARALLEL_ELEMS`]). A base module: the tensor layer's copies and
//! fills split too, so it depends on nothing else in the crate.

use std::sync::atomic::{AtomicBool, Ordering};

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
