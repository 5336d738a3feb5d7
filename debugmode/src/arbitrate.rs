//! fp64 arbitration. An in-place kernel may legitimately do its f32
//! arithmetic in another order than the pure one, and on an ill-conditioned
//! value the two can differ beyond any fixed tolerance. The pure graph,
//! widened to f64, says which is closer to the exact result: a deviation is
//! accepted when the in-place value is no farther from the f64 value (root
//! mean square error) than `multiplier` times the pure f32 value is.

use std::collections::{HashMap, HashSet};

use vigil_engine::exec::{At, Listener, OpEvent, RunOptions};
use vigil_engine::graph::{Graph, VarKind};
use vigil_engine::{inplace, DType, Executor, Tensor};

use crate::error::Result;
use crate::guard::catch;
use crate::lockstep::Feeds;

/// A root divergence of an f32 value, held until the run ends.
pub struct Candidate {
    /// Index of its root in the lockstep run.
    pub root: usize,
    pub var: String,
    pub inplace: Tensor,
    pub pure: Tensor,
}

/// How an arbitration came out, for the finding's details.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    pub rmse_inplace: f64,
    pub rmse_pure: f64,
    pub accepted: bool,
}

/// `g` made pure, with every f32 input, constant and parameter widened to
/// f64; the ops infer their types again. Ops that only take f32 refuse,
/// and arbitration is then not available.
pub fn widen(g: &Graph) -> vigil_engine::Result<Graph> {
    let (mut sources, specs, outputs) = inplace::purify(g)?.to_specs();
    for s in &mut sources {
        if s.ty.dtype != DType::F32 {
            continue;
        }
        s.ty.dtype = DType::F64;
        match &mut s.kind {
            VarKind::Constant(t) | VarKind::Parameter(t) => *t = t.cast(DType::F64)?,
            VarKind::Input { .. } | VarKind::Output { .. } => {}
        }
    }
    Graph::new(g.name(), sources, specs, &outputs)
}

/// Keeps copies of the values named; knows the node running.
struct Keep<'a> {
    names: &'a HashSet<String>,
    kept: HashMap<String, Tensor>,
    current: Option<String>,
}

impl Listener for Keep<'_> {
    fn pre_op(&mut self, _: &At, ev: &OpEvent) {
        self.current = Some(ev.node.name.clone());
    }
    fn post_op(&mut self, _: &At, ev: &OpEvent) {
        self.current = None;
        for (k, t) in ev.outputs.iter().enumerate() {
            let name = &ev.graph.var(ev.node.outputs[k]).name;
            if self.names.contains(name) {
                if let Ok(c) = t.deep_copy() {
                    self.kept.insert(name.clone(), c);
                }
            }
        }
    }
}

fn rmse(a: &Tensor, b: &Tensor) -> vigil_engine::Result<f64> {
    let (x, y) = (a.to_f64_vec()?, b.to_f64_vec()?);
    let n = x.len().max(1) as f64;
    let sum: f64 = x.iter().zip(&y).map(|(p, q)| (p - q) * (p - q)).sum();
    Ok((sum / n).sqrt())
}

/// Judges each candidate against the widened pure graph. For every
/// candidate, why it was not arbitrated when the graph cannot be widened
/// or an op fails or panics in f64 (an op whose `infer` takes f64 but
/// whose kernel reads f32): the divergence then stands as found.
pub fn judge(
    g: &Graph,
    feeds: &Feeds,
    candidates: &[Candidate],
    multiplier: f64,
) -> Result<Vec<Result<Verdict, String>>> {
    let none = |why: String| vec![Err(why); candidates.len()];
    let wide = match widen(g) {
        Ok(w) => w,
        Err(e) => return Ok(none(format!("the graph cannot run in f64: {e}"))),
    };
    let exec = match Executor::new(&wide) {
        Ok(x) => x,
        Err(e) => return Ok(none(format!("the graph cannot run in f64: {e}"))),
    };
    let wide_feeds: Feeds = feeds
        .iter()
        .map(|(k, t)| {
            let t = if t.dtype() == DType::F32 {
                t.cast(DType::F64)?
            } else {
                t.deep_copy()?
            };
            Ok((k.clone(), t))
        })
        .collect::<vigil_engine::Result<_>>()?;
    let names: HashSet<String> = candidates.iter().map(|c| c.var.clone()).collect();
    let mut keep = Keep {
        names: &names,
        kept: HashMap::new(),
        current: None,
    };
    let ran = catch(|| exec.run_with(&wide_feeds, &mut keep, &RunOptions::default()));
    let at = |keep: &Keep| match &keep.current {
        Some(n) => format!("node '{n}' "),
        None => String::new(),
    };
    match ran {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Ok(none(format!("the f64 run failed: {e}"))),
        Err(p) => return Ok(none(format!("{}panicked in the f64 run: {p}", at(&keep)))),
    }
    candidates
        .iter()
        .map(|c| {
            let Some(exact) = keep.kept.get(&c.var) else {
                return Ok(Err(format!("the f64 run has no value '{}'", c.var)));
            };
            if exact.shape() != c.inplace.shape() {
                return Ok(Err(format!("'{}' has another shape in the f64 run", c.var)));
            }
            let (ri, rp) = (rmse(&c.inplace, exact)?, rmse(&c.pure, exact)?);
            Ok(Ok(Verdict {
                rmse_inplace: ri,
                rmse_pure: rp,
                accepted: ri <= multiplier * rp,
            }))
        })
        .collect()
}
