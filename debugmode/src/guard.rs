//! A user op's panic is a finding, never a crash of the check: every run
//! and re-run DebugMode makes calls ops through [`catch`].

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`; a panic comes back as its message.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| panic_text(&*p))
}

/// The text a panic was raised with.
pub fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
