//! Naming the rewrite that breaks the in-place run: confirm the divergence
//! reproduces, then bisect over the accepted rewrites in the order the pass
//! took them (apply a prefix, re-run, halve) until one is left.

use serde_json::json;
use vigil_engine::graph::Graph;
use vigil_engine::inplace::{self, Rewrite};
use vigil_findings::{Finding, Kind};

use crate::config::DebugConfig;
use crate::error::Result;
use crate::lockstep::{self, Feeds, Opts, Outcome};
use crate::reference_isolation::ReferenceIsolation;

/// What bisection concluded.
pub enum Verdict {
    /// The divergence did not reproduce on a second identical run.
    Nondeterministic(Finding),
    /// Applying rewrites up to and including this one makes the run diverge.
    Culprit(Finding, Rewrite),
    /// The run diverges with no rewrite at all: an explicit in-place op or
    /// an op's own defect, not the pass.
    NotARewrite,
}

/// The graphs of one check: as built, after the pass, and the reference.
pub struct Graphs<'a> {
    pub user: &'a Graph,
    pub inplace: &'a Graph,
    pub reference: &'a Graph,
    pub iso: &'a ReferenceIsolation,
    /// The rewrites the pass accepted on `user`, in its order.
    pub rewrites: &'a [Rewrite],
}

/// Finds the culprit of `first`'s divergence; `runs` counts the re-runs.
pub fn culprit(
    gs: &Graphs,
    feeds: &Feeds,
    cfg: &DebugConfig,
    first: &Outcome,
    runs: &mut usize,
) -> Result<Verdict> {
    let (user, inplace_graph, reference, rewrites) = (gs.user, gs.inplace, gs.reference, gs.rewrites);
    let opts = Opts {
        listeners: false,
        poison: cfg.has(crate::Check::Poison),
        compare: true,
        // Every source copied: the re-runs only happen on a divergence,
        // and must not depend on which values the first run could share.
        lend: false,
    };
    *runs += 1;
    let again = lockstep::run(inplace_graph, reference, gs.iso, feeds, cfg, opts)?;
    if again.roots != first.roots {
        let names = |o: &Outcome| {
            o.roots
                .iter()
                .map(|&(n, _)| inplace_graph.node(n).name.clone())
                .collect::<Vec<_>>()
        };
        let f = Finding::new(
            Kind::NONDETERMINISTIC,
            format!(
                "two identical in-place runs diverged differently (first at {:?}, then at {:?}); not bisecting",
                names(first),
                names(&again)
            ),
        )
        .with_details(json!({"first_run": names(first), "second_run": names(&again)}));
        return Ok(Verdict::Nondeterministic(f));
    }
    let diverges = |k: usize, runs: &mut usize| -> Result<bool> {
        *runs += 1;
        let g = inplace::apply(user, &rewrites[..k])?;
        Ok(lockstep::run(&g, reference, gs.iso, feeds, cfg, opts)?.diverged())
    };
    if rewrites.is_empty() || diverges(0, runs)? {
        return Ok(Verdict::NotARewrite);
    }
    // Invariant: prefix `lo` is clean, prefix `hi` diverges.
    let (mut lo, mut hi) = (0, rewrites.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if diverges(mid, runs)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let r = rewrites[hi - 1].clone();
    let node = user.node(r.node);
    let first_bad = first
        .roots
        .first()
        .map(|&(n, _)| inplace_graph.node(n).name.clone())
        .unwrap_or_default();
    let f = Finding::new(
        Kind::BAD_REWRITE,
        format!(
            "running node '{}' as '{}' (destroying input {} '{}') makes the in-place run diverge from the reference at node '{first_bad}'",
            node.name,
            r.variant.op.name(),
            r.input,
            r.var
        ),
    )
    .at(node.name.clone(), node.op.name())
    .with_input(r.input)
    .with_details(json!({
        "rewrite": {"node": node.name, "op": node.op.name(), "inplace_op": r.variant.op.name(), "input": r.input, "var": r.var},
        "diverges_at": first_bad,
        "rewrites_tried": rewrites.len(),
    }));
    Ok(Verdict::Culprit(f, r))
}
