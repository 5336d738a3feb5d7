//! The `vigil` command: the library's CLI over the built-in ops and the
//! broken-op corpora.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    vigil::Cli::new().main()
}
