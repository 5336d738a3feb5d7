//! The `vigil` command line, as a library: [`Cli`] is the whole command
//! with a configurable op registry, so a kernel author's binary is the
//! `vigil` CLI with their ops registered. Library errors get their context
//! here; every failure is one line on stderr and exit code 2.

mod bench;
mod compare;
mod debug;
mod exec;
mod explain;
mod import;
mod minimize;
mod opcheck;
mod output;
mod progress;
mod report;
mod run;
mod selftest;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use vigil_engine::OpRegistry;

#[derive(Parser)]
#[command(
    name = "vigil",
    version,
    about = "Validation and debug-mode harness for tensor op graphs with views and in-place operations",
    arg_required_else_help = true
)]
struct Args {
    #[command(subcommand)]
    command: Command,
    /// Log format on stderr: text, or json (one JSON object per line).
    /// The filter comes from RUST_LOG (default: warn).
    #[arg(long, global = true, value_name = "text|json", default_value = "text")]
    log_format: LogFormat,
    /// Refuse any single allocation larger than this many bytes (suffixes
    /// K, M, G; default: half of physical memory).
    #[arg(long, global = true, value_name = "BYTES", value_parser = parse_bytes)]
    max_alloc: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(format!("'{s}' has an unknown unit (use K, M, G or T)")),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a byte count"))?;
    n.checked_mul(mult)
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("'{s}' is out of range"))
}

#[derive(Subcommand)]
enum Command {
    /// Run one graph and write its outputs as .npy files plus manifest.json.
    Exec(exec::ExecArgs),
    /// Show the execution order, declared maps, in-place decisions and buffers.
    Explain(explain::ExplainArgs),
    /// Import an ONNX model as a vigil-graph/1 case.
    Import(import::ImportArgs),
    /// Run graph suites (under DebugMode by default) and report the findings.
    Run(run::RunArgs),
    /// Run DebugMode on one case (every check) and show all its findings.
    Debug(debug::DebugArgs),
    /// Reduce a failing case to a small graph with the same finding.
    Minimize(minimize::MinimizeArgs),
    /// Compare two recordings made by `vigil exec --record`: where the runs part.
    Compare(compare::CompareArgs),
    /// Reports: merge shards.
    #[command(subcommand)]
    Report(report::ReportCommand),
    /// Time cases in each mode (alternating reps in one process): medians, ratio to plain, peak bytes.
    Bench(bench::BenchArgs),
    /// Prove the harness works here: every broken op caught with exactly its finding.
    Selftest(selftest::SelftestArgs),
    /// Check ops on their own on random samples of inputs under every DebugMode check.
    Opcheck(opcheck::OpcheckArgs),
    /// A worker of `run --isolate`: runs the cases its parent sends on
    /// stdin, answers on stdout. Not for people.
    #[command(name = crate::runner::isolate::WORKER_COMMAND, hide = true)]
    Worker(crate::runner::isolate::WorkerArgs),
}

/// Writes `text` to stdout. A closed pipe (`vigil ... | head`) is not an
/// error: the reader has what it wanted.
pub fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

static QUIET_PANICS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// While set, panics (caught and reported per case) print nothing.
pub fn quiet_panics(on: bool) {
    QUIET_PANICS.store(on, std::sync::atomic::Ordering::SeqCst);
}

/// Exit code for errors in the command's input (graph, .npy, flags, index values).
pub const EXIT_BAD_INPUT: u8 = 2;

/// `--rtol` and `--atol`: a non-negative number. (The flags also allow a
/// leading `-`, so that `--rtol -1` reaches this check instead of being
/// taken for another flag.)
pub(crate) fn parse_tolerance(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x >= 0.0 && x.is_finite() => Ok(x),
        Ok(_) => Err(format!("'{s}' must be a non-negative number")),
        Err(_) => Err(format!("'{s}' is not a number")),
    }
}

/// DebugMode's configuration limited to the `--checks` list; an unknown
/// name is refused with every known name, `all` included.
pub(crate) fn with_checks(
    cfg: vigil_debugmode::DebugConfig,
    list: &str,
) -> anyhow::Result<vigil_debugmode::DebugConfig> {
    match cfg.with_checks(list) {
        Ok(cfg) => Ok(cfg),
        Err(vigil_debugmode::DebugError::UnknownCheck(name)) => anyhow::bail!(
            "--checks: unknown check '{name}' (known: {}, or all)",
            vigil_debugmode::Check::names().join(", ")
        ),
        Err(e) => Err(anyhow::Error::new(e).context("--checks")),
    }
}

/// The names of the checks a run in `mode` makes, for its report.
pub(crate) fn check_names(
    mode: crate::runner::Mode,
    debug: &vigil_debugmode::DebugConfig,
) -> Vec<&'static str> {
    match mode {
        crate::runner::Mode::Plain => Vec::new(),
        crate::runner::Mode::Validate => vec!["non_inplace", "view_map", "numerics"],
        crate::runner::Mode::Debug => debug.checks.iter().map(|c| c.name()).collect(),
    }
}

/// The whole `vigil` command line (run, exec, debug, minimize, explain,
/// compare, import, report, selftest) over an op registry of your choice.
///
/// A kernel author's harness is a binary whose `main` is one line:
///
/// ```no_run
/// use vigil::prelude::*;
///
/// fn register_my_ops(r: &mut OpRegistry) {
///     // r.register_op(std::sync::Arc::new(MyOp));
/// #   let _ = r;
/// }
///
/// fn main() -> std::process::ExitCode {
///     vigil::Cli::new().register(register_my_ops).main()
/// }
/// ```
///
/// Every command that loads a graph (`run`, `exec`, `debug`, `minimize`,
/// `explain`) makes its ops from this registry; nothing falls back to a
/// global one.
pub struct Cli {
    registry: OpRegistry,
}

impl Default for Cli {
    fn default() -> Self {
        Cli::new()
    }
}

impl Cli {
    /// The `vigil` command: the built-in ops and the broken-op corpora
    /// ([`crate::default_registry`]).
    pub fn new() -> Cli {
        Cli::with_registry(crate::default_registry())
    }

    /// The command over exactly the ops of `registry`.
    pub fn with_registry(registry: OpRegistry) -> Cli {
        Cli { registry }
    }

    /// Adds ops: `f` registers them, as the `register(&mut OpRegistry)`
    /// functions of op libraries (Vigil's own included) do, so one passes
    /// straight in. An op registered under a name the registry already has
    /// replaces it (to check your kernel for a built-in op against the
    /// shipped suites).
    pub fn register(mut self, f: impl FnOnce(&mut OpRegistry)) -> Cli {
        f(&mut self.registry);
        self
    }

    /// The ops graphs are made from.
    pub fn registry(&self) -> &OpRegistry {
        &self.registry
    }

    /// Parses the process's arguments and runs the command. Meant to be
    /// the binary's `main`: it installs a panic hook that prints one line,
    /// a tracing subscriber, and the `--max-alloc` limit.
    pub fn main(self) -> ExitCode {
        self.main_from(std::env::args_os())
    }

    /// Like [`Cli::main`], with the arguments given (the first is the
    /// program name).
    pub fn main_from<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let cli = match Args::try_parse_from(args) {
            Ok(c) => c,
            // `vigil` alone: the help, on stderr, and exit 2 as for any
            // other usage error (a script whose command went missing must
            // not pass).
            Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                // Coloured only when stderr is a terminal.
                let _ = e.print();
                return ExitCode::from(EXIT_BAD_INPUT);
            }
            Err(e) if e.use_stderr() => {
                // clap's message spans several lines (what is wrong, usage, a
                // tip); join what comes before the usage into one line.
                let text = e.to_string();
                let what: Vec<&str> = text
                    .lines()
                    .map(str::trim)
                    .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                    .filter(|l| !l.is_empty())
                    .collect();
                eprintln!(
                    "vigil: error: {} (see --help)",
                    what.join(" ").trim_start_matches("error: ")
                );
                return ExitCode::from(EXIT_BAD_INPUT);
            }
            Err(e) => {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
        };
        init_tracing(cli.log_format);
        if let Some(b) = cli.max_alloc {
            vigil_engine::tensor::limit::set_alloc_limit(b);
        }
        // A panic is a bug in Vigil or in an op; report it in one line rather
        // than with a backtrace.
        std::panic::set_hook(Box::new(|info| {
            if QUIET_PANICS.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            let loc = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            eprintln!("vigil: internal error: {msg}{loc}");
        }));
        let registry = &self.registry;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match cli.command {
            Command::Exec(a) => exec::run(a, registry),
            Command::Explain(a) => explain::run(a, registry),
            Command::Import(a) => import::run(a),
            Command::Run(a) => run::run(a, registry),
            Command::Debug(a) => debug::debug(a, registry),
            Command::Minimize(a) => minimize::run(a, registry),
            Command::Compare(a) => compare::run(a),
            Command::Report(c) => report::run(c),
            Command::Selftest(a) => selftest::run(a),
            Command::Opcheck(a) => opcheck::run(a, registry),
            Command::Worker(a) => {
                // Panics are caught per case and reported in its row.
                quiet_panics(true);
                crate::runner::isolate::serve(a, registry)
            }
            Command::Bench(a) => bench::run(a, registry),
        }));
        match result {
            Ok(Ok(code)) => code,
            Ok(Err(e)) => {
                eprintln!("vigil: error: {}", crate::one_line(&e));
                ExitCode::from(EXIT_BAD_INPUT)
            }
            Err(_) => ExitCode::from(70),
        }
    }
}

fn init_tracing(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    // Colour only on a terminal: a log redirected to a file gets no escape codes.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
