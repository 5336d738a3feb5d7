//! How a worker ended, in the words of an error row.

use std::process::ExitStatus;

/// "worker killed by SIGSEGV", "worker exited with code 3", plus the last
/// line the worker wrote to stderr when it left one ("fatal runtime error:
/// stack overflow", "memory allocation of 67108864 bytes failed").
pub fn describe(status: ExitStatus, last_stderr: Option<&str>) -> String {
    let what = match (signal(status), status.code()) {
        (Some(sig), _) => format!("worker killed by {sig}"),
        (None, Some(code)) => format!("worker exited with code {code} before answering"),
        (None, None) => format!("worker ended before answering ({status})"),
    };
    match last_stderr.map(str::trim).filter(|l| !l.is_empty()) {
        Some(line) => format!("{what}: {line}"),
        None => what,
    }
}

/// True when the worker died of SIGINT: the user pressed Ctrl-C, which the
/// terminal sends to the whole process group.
pub fn interrupted(status: ExitStatus) -> bool {
    signal(status).as_deref() == Some("SIGINT")
}

#[cfg(unix)]
fn signal(status: ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    let n = status.signal()?;
    Some(match nix::sys::signal::Signal::try_from(n) {
        Ok(s) => s.as_str().to_string(),
        Err(_) => format!("signal {n}"),
    })
}

#[cfg(not(unix))]
fn signal(_status: ExitStatus) -> Option<String> {
    None
}
