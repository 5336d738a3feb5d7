//! Prepared graphs: the in-place pass and the executor's plan done once,
//! for a graph that runs many times (a training loop, `vigil bench`).
//!
//! Nothing prepared depends on input shapes: the in-place pass and the
//! plan (order, releases, fusion plan) read the graph's declared types
//! only, and fused sweeps check their operands' layouts at run time. So a
//! prepared graph runs any feeds its declared types admit, at any shape,
//! with nothing to prepare again; feeds they do not admit are refused by
//! each run, as [`Executor::run`] refuses them.

use std::collections::HashMap;

use crate::error::Result;
use crate::exec::executor::{Executor, Plan, RunOptions, RunOutput};
use crate::exec::listener::Listener;
use crate::graph::Graph;
use crate::inplace;
use crate::tensor::Tensor;

/// A graph after the in-place pass (or as given), with its executor's plan:
/// every run borrows both, so a run pays for the run alone.
pub struct Prepared {
    graph: Graph,
    plan: Plan,
    /// Rewrites the in-place pass accepted (0 without the pass).
    rewrites: usize,
}

impl Prepared {
    /// Runs the in-place pass on `graph` and plans the result.
    pub fn new(graph: &Graph) -> Result<Prepared> {
        let pass = inplace::run(graph)?;
        let rewrites = pass.accepted();
        let plan = Plan::new(&pass.graph)?;
        Ok(Prepared {
            graph: pass.graph,
            plan,
            rewrites,
        })
    }

    /// Plans `graph` as given, without the in-place pass (a graph already
    /// rewritten, or one to run exactly as written).
    pub fn as_given(graph: Graph) -> Result<Prepared> {
        let plan = Plan::new(&graph)?;
        Ok(Prepared {
            graph,
            plan,
            rewrites: 0,
        })
    }

    /// The graph that runs.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The graph that runs, given back.
    pub fn into_graph(self) -> Graph {
        self.graph
    }

    /// Rewrites the in-place pass accepted.
    pub fn rewrites(&self) -> usize {
        self.rewrites
    }

    /// An executor on the prepared plan; making one computes nothing.
    pub fn executor(&self) -> Executor<'_> {
        self.plan.executor(&self.graph)
    }

    /// Runs with no listener.
    pub fn run(&self, feeds: &HashMap<String, Tensor>) -> Result<RunOutput> {
        self.executor().run(feeds)
    }

    /// Runs, firing `listener`'s hooks ([`Executor::run_with`]).
    pub fn run_with(
        &self,
        feeds: &HashMap<String, Tensor>,
        listener: &mut dyn Listener,
        opts: &RunOptions,
    ) -> Result<RunOutput> {
        self.executor().run_with(feeds, listener, opts)
    }
}
