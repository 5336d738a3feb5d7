//! The DebugMode driver: prepares the in-place and reference graphs once,
//! runs them in lockstep, then the checks the configuration asks for.

use std::collections::HashMap;

use serde_json::json;
use std::sync::Arc;

use vigil_engine::exec::Lent;
use vigil_engine::graph::Graph;
use vigil_engine::{inplace, Tensor};
use vigil_findings::Kind;

use crate::bisect::{self, Verdict};
use crate::config::{Check, DebugConfig};
use crate::error::{DebugError, Result};
use crate::lockstep::{self, Opts};
use crate::reference_isolation::{reference, ReferenceIsolation};
use crate::report::{DebugReport, DebugStats};

/// Checks graphs; see the crate documentation.
#[derive(Clone, Debug, Default)]
pub struct DebugMode {
    cfg: DebugConfig,
}

impl DebugMode {
    pub fn new(cfg: DebugConfig) -> DebugMode {
        DebugMode { cfg }
    }

    pub fn config(&self) -> &DebugConfig {
        &self.cfg
    }

    /// Checks `graph` (pure, or with explicit in-place ops) on `feeds`. The
    /// graph's values and the feeds are never modified: every run works on
    /// copies.
    pub fn check(&self, graph: &Graph, feeds: &HashMap<String, Tensor>) -> Result<DebugReport> {
        let cfg = &self.cfg;
        let opts = Opts {
            listeners: cfg.has(Check::Listeners),
            poison: cfg.has(Check::Poison),
            compare: cfg.has(Check::Lockstep),
            lend: true,
        };
        // The caller's values are lent read-only for the whole check: a
        // write to one fails instead of changing it, so the runs can share
        // them instead of copying them all first.
        let _lent = Lent::new(graph, feeds);
        let attempt = |iso: &Arc<ReferenceIsolation>, opts: Opts| -> Result<_> {
            let pass = inplace::run(graph)?;
            let reference = reference(graph, iso)?;
            let out = lockstep::run(&pass.graph, &reference, iso, feeds, cfg, opts)?;
            Ok((pass, reference, out))
        };
        // The in-place run copies only the sources it overwrites, and the
        // reference watches for writes to the values it produced.
        let iso = ReferenceIsolation::watch();
        let (iso, (pass, reference, out)) = match attempt(&iso, opts) {
            Ok(done) if !iso.tripped() => (iso, done),
            Err(DebugError::Engine(vigil_engine::Error::ReadOnly { .. })) | Ok(_) => {
                // An op wrote a value it had not declared: a lent source,
                // or a reference value after it was produced. Repeat with
                // every source copied and a reference whose ops work on
                // private copies, so the findings can name the write.
                let iso = ReferenceIsolation::copying();
                let done = attempt(&iso, Opts { lend: false, ..opts })?;
                (iso, done)
            }
            Err(e) => return Err(e),
        };
        let user = graph;
        let mut stats = DebugStats {
            nodes: user.nodes().len(),
            rewrites: pass.rewrites.len(),
            compared: out.compared,
            exact: out.exact,
            swept: out.swept,
            tolerated: out.tolerated,
            propagated: out.propagated,
            arbitrated: out.arbitrated,
            reruns: 0,
            peak_inplace_bytes: out.peak_inplace,
            peak_lockstep_bytes: out.peak_both,
        };
        let mut findings = out.findings.clone();
        if cfg.has(Check::Culprit) && out.diverged() {
            let graphs = bisect::Graphs {
                user,
                inplace: &pass.graph,
                reference: &reference,
                iso: &iso,
                rewrites: &pass.rewrites,
            };
            match bisect::culprit(&graphs, feeds, cfg, &out, &mut stats.reruns)? {
                Verdict::Nondeterministic(f) => findings.push(f),
                Verdict::Culprit(f, r) => {
                    // The root-cause findings name the rewrite too.
                    for root in findings
                        .iter_mut()
                        .filter(|f| f.kind == Kind::VALUE_MISMATCH || f.kind == Kind::READ_AFTER_DESTROY)
                    {
                        if let serde_json::Value::Object(m) = &mut root.details {
                            m.insert(
                                "rewrite".into(),
                                json!({"node": r.node_name, "inplace_op": r.variant.op.name(), "input": r.input, "var": r.var}),
                            );
                        }
                    }
                    findings.push(f);
                }
                Verdict::NotARewrite => {}
            }
        }
        // An op that panicked in the lockstep run would panic in every
        // re-run too: its finding says it all. Otherwise a re-run check
        // that cannot run is a warning, never the end of the report.
        let panicked = findings.iter().any(|f| f.kind == Kind::OP_PANIC);
        let mut rerun = |check: Check, found: Result<Vec<vigil_findings::Finding>>| match found {
            Ok(f) => findings.extend(f),
            Err(e) => findings.push(
                vigil_findings::Finding::new(
                    Kind::CHECK_SKIPPED,
                    format!("the {} check could not run: {e}", check.name()),
                )
                .with_details(json!({"check": check.name(), "error": e.to_string()})),
            ),
        };
        let reruns = &mut stats.reruns;
        for check in [
            Check::Orders,
            Check::Prealloc,
            Check::Layouts,
            Check::Threads,
            Check::Gradient,
        ] {
            if panicked || !cfg.has(check) {
                continue;
            }
            let found = match check {
                Check::Orders => crate::orders::check(&pass.graph, feeds, cfg, reruns),
                Check::Prealloc => crate::prealloc::check(&pass.graph, feeds, cfg, reruns),
                Check::Layouts => crate::layouts::check(&pass.graph, feeds, cfg, reruns),
                Check::Threads => crate::threads::check(&pass.graph, feeds, cfg.threads, reruns),
                _ => crate::gradcheck::check(user, feeds, &cfg.grad, &cfg.autodiff.0, cfg.seed, reruns),
            };
            rerun(check, found);
        }
        Ok(DebugReport {
            findings,
            stats,
            outputs: out.outputs,
        })
    }
}
