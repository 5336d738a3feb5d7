//! Intra-op parallelism: large matmuls (faer) and long elementwise math
//! kernels split their work across the rayon pool they are called from:
//! the global pool, or inside `vigil run` the `--jobs N` pool its cases run
//! on, so cases and kernels never oversubscribe the cores: a kernel called
//! from a busy pool just runs its pieces on the threads that are free. Small ops stay on the calling thread (see
//! `ops::linalg::PARALLEL_MACS` and `ops::vmath::PARALLEL_ELEMS`).

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

/// Elements per task of a memory-bound pass over a long slice (comparing,
/// summarizing, zeroing): large enough that a task's overhead vanishes,
/// small enough that both cores get work.
pub const PASS_CHUNK: usize = 1 << 16;

/// Whether a pass over `len` elements should split across the rayon pool:
/// long enough (see `ops::vmath::PARALLEL_ELEMS`) and intra-op parallelism on.
pub fn split(len: usize) -> bool {
    len >= crate::ops::vmath::PARALLEL_ELEMS && intra_op()
}
