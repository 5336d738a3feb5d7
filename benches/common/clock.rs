//! The clock paired benches read: wall time by default, or with
//! `VIGIL_CLOCK=cpu` the process's CPU time (user + system, every thread).
//!
//! On a shared machine a run's wall time includes the time other
//! processes held the cores, which moves ratios by tenths; CPU time counts
//! only this process's work (spin-waiting threads included), so its ratios
//! stay put under load. Report which clock a figure came from.

use std::time::Instant;

/// A start point on the chosen clock.
pub enum Clock {
    Wall(Instant),
    Cpu(f64),
}

fn cpu_seconds() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    let u = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage(RUSAGE_SELF)");
    let s = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    s(u.user_time()) + s(u.system_time())
}

/// Whether `VIGIL_CLOCK=cpu` asks for CPU time.
pub fn cpu_clock() -> bool {
    std::env::var("VIGIL_CLOCK").is_ok_and(|c| c == "cpu")
}

impl Clock {
    pub fn start() -> Clock {
        if cpu_clock() {
            Clock::Cpu(cpu_seconds())
        } else {
            Clock::Wall(Instant::now())
        }
    }

    /// Milliseconds since `start`.
    pub fn elapsed_ms(&self) -> f64 {
        match self {
            Clock::Wall(t) => t.elapsed().as_secs_f64() * 1e3,
            Clock::Cpu(t) => (cpu_seconds() - t) * 1e3,
        }
    }
}

/// The clock's name for a printed figure.
pub fn name() -> &'static str {
    if cpu_clock() {
        "cpu"
    } else {
        "wall"
    }
}
