//! Where a bench's own thread stands relative to the rayon pool.

/// Makes this thread worker 0 of the global rayon pool, as a `vigil run`
/// case's thread is (`vigil::engine::parallel::join_global_pool`);
/// `VIGIL_IN_POOL=0` leaves it outside, with one thread more than cores.
pub fn join_pool() {
    if std::env::var("VIGIL_IN_POOL").is_ok_and(|v| v == "0") {
        return;
    }
    vigil::engine::parallel::join_global_pool();
}
