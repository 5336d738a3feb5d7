//! The whole `vigil` command line with this crate's ops registered:
//! `kernel-vigil run suite`, `kernel-vigil debug suite/fast_softmax`, ...

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    vigil::Cli::new().register(kernel_author::register).main()
}
