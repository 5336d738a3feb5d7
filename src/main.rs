//! The `vigil` command: the library's CLI over the built-in ops and the
//! broken-op corpora.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    join_pool();
    vigil::Cli::new().main()
}

/// Makes this thread worker 0 of the global rayon pool, so that a command
/// running one graph here (`vigil bench`, `debug`, `exec`) splits its large
/// ops over this thread and one more per other core. Left outside, this
/// thread waits while one pool worker per core runs the parts, and its own
/// serial work between splits competes with them: a thread more than cores
/// (measured: `--mode validate` on the MLP step 1.37x-1.41x of plain that
/// way, 1.24x-1.31x in the pool). With one core the pool keeps its own
/// worker: a pool made only of this thread would never run work that
/// another thread hands it.
fn join_pool() {
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
