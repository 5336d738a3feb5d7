//! Where a bench's own thread stands relative to the rayon pool.

/// Makes the calling thread worker 0 of the global rayon pool, as each case
/// of `vigil run` runs on a worker of its pool: intra-op splits then run on
/// this thread plus one more per core. Outside the pool, this thread would
/// wait while the pool's own workers (one per core) ran the parts, and its
/// serial work between them would compete with those workers: one thread
/// more than cores. `VIGIL_IN_POOL=0` measures that way instead.
pub fn join_pool() {
    if std::env::var("VIGIL_IN_POOL").is_ok_and(|v| v == "0") {
        return;
    }
    // Fails only when the global pool already exists (then it stays as is).
    let _ = rayon::ThreadPoolBuilder::new()
        .use_current_thread()
        .build_global();
}
