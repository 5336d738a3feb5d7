//! The `vigil` command: the library's CLI over the built-in ops and the
//! broken-op corpora.

#![forbid(unsafe_code)]

/// Faster than the system allocator on the many short-lived buffers of a
/// run (see the mimalloc entry in Cargo.toml).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // `vigil bench`, `debug` and `exec` run their graph on this thread.
    vigil::engine::parallel::join_global_pool();
    vigil::Cli::new().main()
}
