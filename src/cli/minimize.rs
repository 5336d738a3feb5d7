//! `vigil minimize CASE --out DIR`: delta-debugs a failing case down to a
//! small subgraph that still gives the same finding kind on the same op,
//! and writes it as a runnable suite case.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::case::{load_feeds, load_graph, CasePaths, FeedSource};
use anyhow::{bail, Context, Result};
use clap::Args;
use vigil_debugmode::{minimize, DebugConfig, Kind};
use vigil_engine::OpRegistry;

#[derive(Args)]
pub struct MinimizeArgs {
    /// The failing case directory (graph.json, inputs/).
    case: PathBuf,
    /// Where to write the reduced case (must not exist, or be empty).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Keep this finding kind (default: the case's first error finding).
    #[arg(long, value_name = "KIND")]
    kind: Option<String>,
    /// DebugMode checks used while reducing (default: all).
    #[arg(long, value_name = "LIST")]
    checks: Option<String>,
}

pub fn run(a: MinimizeArgs, registry: &OpRegistry) -> Result<ExitCode> {
    if a.out.exists() && a.out.read_dir().map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{}: exists and is not an empty directory", a.out.display());
    }
    let paths = CasePaths::resolve(&a.case)?;
    let graph = load_graph(&paths.graph, registry)?;
    let feeds = load_feeds(&graph, paths.inputs.as_deref(), &[], FeedSource::CaseDir)?;
    let mut cfg = DebugConfig::all();
    if let Some(c) = &a.checks {
        cfg = super::with_checks(cfg, c)?;
    }
    let kind = a.kind.map(Kind::new);
    let m = minimize(&graph, &feeds, &cfg, kind.as_ref()).with_context(|| a.case.display().to_string())?;

    // Write into a temporary sibling, then rename: no partial case on failure.
    let parent = a
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(".vigil-minimize-")
        .tempdir_in(parent)
        .with_context(|| format!("{}: cannot create a directory beside it", a.out.display()))?;
    let dir = tmp.path();
    // The reduced graph is named after the case it came from (a corpus
    // graph's own name, such as `selftest`, says nothing about it).
    let mut graph_json: serde_json::Value = serde_json::from_str(&m.graph.to_json()?)?;
    graph_json["name"] = serde_json::Value::String(case_name(&paths.graph));
    std::fs::write(
        dir.join("graph.json"),
        serde_json::to_string_pretty(&graph_json)? + "\n",
    )?;
    std::fs::create_dir(dir.join("inputs"))?;
    let mut names: Vec<&String> = m.feeds.keys().collect();
    names.sort();
    for name in names {
        if !crate::case::is_file_stem(name) {
            bail!("input '{name}' of the reduced graph cannot be a file name (use letters, digits, '_', '-', '.')");
        }
        m.feeds[name].write_npy(dir.join("inputs").join(format!("{name}.npy")))?;
    }
    let expect = serde_json::json!({"finding": m.finding.kind, "op": m.finding.op});
    std::fs::write(dir.join("expect.json"), serde_json::to_string(&expect)? + "\n")?;
    std::fs::write(
        dir.join("README.md"),
        format!(
            "Reduced from `{}` ({} nodes to {}) by `vigil minimize`: it gives `{}` on op `{}`.\nRun it with `vigil debug {}`.\n",
            a.case.display(),
            m.nodes_before,
            m.graph.nodes().len(),
            m.finding.kind,
            m.finding.op,
            a.out.display()
        ),
    )?;
    if a.out.exists() {
        std::fs::remove_dir(&a.out).with_context(|| a.out.display().to_string())?;
    }
    std::fs::rename(tmp.keep(), &a.out).with_context(|| a.out.display().to_string())?;
    println!(
        "{} -> {} in {}; still gives {} on op '{}'.\nrun it with: vigil debug {}",
        vigil_reports::plural(m.nodes_before as u64, "node"),
        vigil_reports::plural(m.graph.nodes().len() as u64, "node"),
        vigil_reports::plural(m.runs as u64, "DebugMode run"),
        m.finding.kind,
        m.finding.op,
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The case's name: its directory's, or the graph file's stem when the
/// file is not `graph.json`.
fn case_name(graph: &std::path::Path) -> String {
    let name = if graph.file_name().is_some_and(|f| f == "graph.json") {
        graph.parent().and_then(std::path::Path::file_name)
    } else {
        graph.file_stem()
    };
    name.map_or_else(|| "case".to_string(), |s| s.to_string_lossy().into_owned())
}
