//! The `vigil` command: the library's CLI over the built-in ops and the
//! broken-op corpora.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    // `vigil bench`, `debug` and `exec` run their graph on this thread.
    vigil::engine::parallel::join_global_pool();
    vigil::Cli::new().main()
}
