//! Progress of `vigil run` on stderr: a bar on a terminal; otherwise (CI
//! logs) a line per failing case as it happens and a count every few
//! seconds, so a log of hundreds of passing cases stays short.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use vigil_reports::{Case, Status};

/// How often the plain form prints its count.
pub const EVERY: Duration = Duration::from_secs(5);

pub enum Progress {
    Bar(ProgressBar),
    Lines(Lines),
    Quiet,
}

impl Progress {
    pub fn new(total: usize, quiet: bool, terminal: bool) -> Progress {
        if quiet {
            Progress::Quiet
        } else if terminal {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} cases, {msg} [{elapsed}<{eta}]")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_message("0 findings");
            Progress::Bar(bar)
        } else {
            Progress::Lines(Lines::new(total, EVERY, Box::new(std::io::stderr())))
        }
    }

    pub fn case_done(&self, case: &Case, findings_so_far: usize) {
        match self {
            Progress::Bar(b) => {
                b.set_message(format!("{findings_so_far} findings"));
                b.inc(1);
            }
            Progress::Lines(l) => l.case_done(case),
            Progress::Quiet => {}
        }
    }

    pub fn finish(&self) {
        if let Progress::Bar(b) = self {
            b.finish_and_clear();
        }
    }
}

/// The plain form. Counts are atomics; the writer and the time of the
/// last count line sit behind one lock, taken once per case.
pub struct Lines {
    total: usize,
    every: Duration,
    started: Instant,
    done: AtomicUsize,
    failed: AtomicUsize,
    errors: AtomicUsize,
    warnings: AtomicUsize,
    out: Mutex<(Box<dyn Write + Send>, Instant)>,
}

impl Lines {
    pub fn new(total: usize, every: Duration, out: Box<dyn Write + Send>) -> Lines {
        let now = Instant::now();
        Lines {
            total,
            every,
            started: now,
            done: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            errors: AtomicUsize::new(0),
            warnings: AtomicUsize::new(0),
            out: Mutex::new((out, now)),
        }
    }

    fn case_done(&self, case: &Case) {
        let k = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        self.warnings
            .fetch_add(case.warnings().count(), Ordering::Relaxed);
        let problem = match case.status {
            Status::Pass => None,
            Status::Fail => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let mut errors = case.errors();
                let first = errors.next();
                let more = errors.count();
                Some(match first {
                    Some(f) if more > 0 => format!("{}: {} (+{more} more)", &*f.kind, f.message),
                    Some(f) => format!("{}: {}", &*f.kind, f.message),
                    None => String::new(),
                })
            }
            Status::Error => {
                self.errors.fetch_add(1, Ordering::Relaxed);
                Some(case.error.clone().unwrap_or_default())
            }
        };
        let Ok(mut guard) = self.out.lock() else {
            return;
        };
        let (out, last) = &mut *guard;
        // Write errors on stderr are ignored: progress is not the report.
        if let Some(what) = problem {
            let _ = writeln!(
                out,
                "[{k}/{}] {} {}: {what}",
                self.total,
                case.status.name(),
                case.path
            );
        }
        let now = Instant::now();
        if now.duration_since(*last) >= self.every && k < self.total {
            *last = now;
            let _ = writeln!(
                out,
                "[{k}/{}] {} failed, {} errors, {} warnings so far ({} s)",
                self.total,
                self.failed.load(Ordering::Relaxed),
                self.errors.load(Ordering::Relaxed),
                self.warnings.load(Ordering::Relaxed),
                now.duration_since(self.started).as_secs()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use vigil_reports::Finding;

    /// A writer whose bytes the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn text(s: &Shared) -> String {
        String::from_utf8(s.0.lock().unwrap().clone()).unwrap()
    }

    fn cases() -> Vec<Case> {
        let mut v: Vec<Case> = (0..50).map(|i| Case::new("p", format!("s/p{i}"))).collect();
        v.push(Case::new("f", "s/f").with_finding(Finding::error("output_mismatch", "2 of 4 differ")));
        v.push(Case::new("e", "s/e").errored("no graph"));
        v.push(Case::new("w", "s/w").with_finding(Finding::warning("declared_destroy_unused", "m")));
        v
    }

    #[test]
    fn only_failures_are_printed_between_counts() {
        let out = Shared::default();
        let cases = cases();
        let p = Lines::new(cases.len(), Duration::from_secs(3600), Box::new(out.clone()));
        for c in &cases {
            p.case_done(c);
        }
        assert_eq!(
            text(&out),
            "[51/53] fail s/f: output_mismatch: 2 of 4 differ\n[52/53] error s/e: no graph\n"
        );
    }

    #[test]
    fn a_count_line_comes_when_the_interval_has_passed() {
        let out = Shared::default();
        let cases = cases();
        let p = Lines::new(cases.len(), Duration::ZERO, Box::new(out.clone()));
        for c in &cases[..3] {
            p.case_done(c);
        }
        let t = text(&out);
        assert_eq!(t.lines().count(), 3, "{t}");
        assert!(
            t.starts_with("[1/53] 0 failed, 0 errors, 0 warnings so far"),
            "{t}"
        );
    }
}
