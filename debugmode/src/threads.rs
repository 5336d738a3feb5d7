//! Thread counts: the in-place graph run on a one-thread rayon pool and on
//! a pool of several threads (at least two, even on one core), compared
//! value by value, exactly. A kernel whose arithmetic follows the pool's
//! size (f32 partial sums chunked by thread count) gives other bits; the
//! first op whose output differs while its inputs agreed is named. Before
//! a difference is blamed on threads, the one-thread run is repeated: a
//! difference there too makes the op `nondeterministic` instead.
//!
//! Tensors share buffers through reference counts and never cross threads,
//! so each run rebuilds the graph and its values on its own thread (the
//! worker 0 of its pool) from plain vectors.

use std::collections::{HashMap, HashSet};

use serde_json::json;
use vigil_engine::compare::{compare, Tolerance};
use vigil_engine::exec::{At, Copier, Listener, OpEvent, RunOptions};
use vigil_engine::graph::{Graph, NodeSpec, VarKind, VarSpec};
use vigil_engine::ops::OpCtx;
use vigil_engine::tensor::storage::AnyVec;
use vigil_engine::{BufferPolicy, DType, Element, Executor, Tensor, TypeInfo};
use vigil_findings::{Finding, Kind};

use crate::error::Result;
use crate::guard::catch;
use crate::lockstep::{summary, Feeds};

/// A tensor's values in C order, free to cross threads.
struct Plain {
    shape: Vec<usize>,
    data: AnyVec,
}

impl Plain {
    fn of(t: &Tensor) -> vigil_engine::Result<Plain> {
        let data = vigil_engine::dispatch_all!(t.dtype(), T => {
            let v: Vec<T> = t.read(|a: ndarray::ArrayViewD<'_, T>| a.iter().copied().collect())?;
            <T as Element>::into_any(v)
        });
        Ok(Plain {
            shape: t.shape().to_vec(),
            data,
        })
    }

    fn tensor(&self) -> vigil_engine::Result<Tensor> {
        let dtype: DType = self.data.dtype();
        vigil_engine::dispatch_all!(dtype, T => {
            let v: Vec<T> = match <T as Element>::from_any(clone_any(&self.data)) {
                Ok(v) => v,
                Err(_) => return Err(vigil_engine::Error::Graph("dtype mix-up".into())),
            };
            Tensor::from_vec(&self.shape, v)
        })
    }
}

fn clone_any(a: &AnyVec) -> AnyVec {
    a.clone()
}

enum PlainKind {
    Input { mutable: bool },
    Constant(Plain),
    Parameter(Plain),
}

/// A graph and its feeds, free to cross threads.
struct PlainGraph {
    name: String,
    sources: Vec<(String, TypeInfo, PlainKind)>,
    specs: Vec<NodeSpec>,
    outputs: Vec<String>,
    feeds: Vec<(String, Plain)>,
}

impl PlainGraph {
    fn of(g: &Graph, feeds: &Feeds) -> vigil_engine::Result<PlainGraph> {
        let (sources, specs, outputs) = g.to_specs();
        let sources = sources
            .into_iter()
            .map(|s| {
                let kind = match &s.kind {
                    VarKind::Constant(t) => PlainKind::Constant(Plain::of(t)?),
                    VarKind::Parameter(t) => PlainKind::Parameter(Plain::of(t)?),
                    VarKind::Input { mutable } => PlainKind::Input { mutable: *mutable },
                    VarKind::Output { .. } => PlainKind::Input { mutable: false },
                };
                Ok((s.name, s.ty, kind))
            })
            .collect::<vigil_engine::Result<_>>()?;
        let feeds = feeds
            .iter()
            .map(|(k, t)| Ok((k.clone(), Plain::of(t)?)))
            .collect::<vigil_engine::Result<_>>()?;
        Ok(PlainGraph {
            name: g.name().to_string(),
            sources,
            specs,
            outputs,
            feeds,
        })
    }

    fn build(&self) -> vigil_engine::Result<(Graph, Feeds)> {
        let sources = self
            .sources
            .iter()
            .map(|(name, ty, kind)| {
                let kind = match kind {
                    PlainKind::Input { mutable } => VarKind::Input { mutable: *mutable },
                    PlainKind::Constant(p) => VarKind::Constant(p.tensor()?),
                    PlainKind::Parameter(p) => VarKind::Parameter(p.tensor()?),
                };
                Ok(VarSpec {
                    name: name.clone(),
                    ty: ty.clone(),
                    kind,
                })
            })
            .collect::<vigil_engine::Result<_>>()?;
        let g = Graph::new(&self.name, sources, self.specs.clone(), &self.outputs)?;
        let feeds = self
            .feeds
            .iter()
            .map(|(k, p)| Ok((k.clone(), p.tensor()?)))
            .collect::<vigil_engine::Result<_>>()?;
        Ok((g, feeds))
    }
}

/// A root difference: (node, op, output, message, details, whether two
/// more calls of the op on the same inputs in the same pool disagreed).
type Root = (String, String, usize, String, serde_json::Value, bool);

/// Keeps every value (a baseline), or compares with one.
struct Values<'b> {
    base: Option<&'b HashMap<String, Plain>>,
    kept: HashMap<String, Plain>,
    diverged: HashSet<String>,
    roots: Vec<Root>,
    /// The inputs of the op about to run (private copies for an op that
    /// destroys one), to call it again.
    before: Vec<Tensor>,
}

impl Values<'_> {
    /// Whether two more calls of `ev`'s op on its inputs as they were give
    /// other values than `got` (output `k`): then the op is
    /// nondeterministic, whatever the pool.
    fn unstable(&self, ev: &OpEvent, k: usize, got: &Tensor) -> bool {
        (0..2).any(|_| {
            let mut c = Copier::default();
            let Ok(inputs) = self
                .before
                .iter()
                .map(|t| c.copy(t))
                .collect::<vigil_engine::Result<Vec<_>>>()
            else {
                return false;
            };
            match catch(|| ev.node.op.compute(&inputs, &mut OpCtx::new(&ev.node.name))) {
                Ok(Ok(outs)) => outs
                    .get(k)
                    .and_then(|o| compare(o, got, Tolerance::EXACT).ok())
                    .is_some_and(|c| !c.is_exact()),
                _ => false,
            }
        })
    }
}

impl Listener for Values<'_> {
    // A body's nodes are re-run through their control node's calls.
    fn pre_op(&mut self, at: &At, ev: &OpEvent) {
        if self.base.is_none() || at.in_body {
            return;
        }
        self.before = if ev.node.op.destroy_map().is_empty() {
            ev.inputs.to_vec()
        } else {
            let mut c = Copier::default();
            ev.inputs.iter().filter_map(|t| c.copy(t).ok()).collect()
        };
    }

    fn post_op(&mut self, at: &At, ev: &OpEvent) {
        if at.in_body {
            return;
        }
        let g = ev.graph;
        let Some(base) = self.base else {
            for (k, t) in ev.outputs.iter().enumerate() {
                if let Ok(p) = Plain::of(t) {
                    self.kept.insert(g.var(ev.node.outputs[k]).name.clone(), p);
                }
            }
            return;
        };
        let spoiled = ev
            .node
            .inputs
            .iter()
            .any(|&v| self.diverged.contains(&g.var(v).name));
        for (k, t) in ev.outputs.iter().enumerate() {
            let name = &g.var(ev.node.outputs[k]).name;
            let Some(want) = base.get(name).and_then(|p| p.tensor().ok()) else {
                continue;
            };
            let Ok(cmp) = compare(t, &want, Tolerance::EXACT) else {
                continue;
            };
            if cmp.is_exact() {
                continue;
            }
            self.diverged.insert(name.clone());
            if !spoiled {
                let unstable = self.unstable(ev, k, t);
                self.roots.push((
                    ev.node.name.clone(),
                    ev.op_name().to_string(),
                    k,
                    summary(&cmp),
                    json!({"var": name, "max_abs_err": vigil_findings::json_f64(cmp.max_abs), "max_ulp": cmp.max_ulp,
                           "differing": cmp.differing, "elements": cmp.elements,
                           "first": cmp.first.first().map(|m| json!({"index": m.index, "got": vigil_findings::json_f64(m.got), "want": vigil_findings::json_f64(m.want)}))}),
                    unstable,
                ));
            }
        }
    }
}

/// Runs `g` on a new thread that is worker 0 of a pool of `threads`, with
/// `base` to compare with (none: keep every value). `Err`: the run could
/// not be made (the pool, the graph, or an op that failed or panicked).
fn run_on_pool(
    g: &PlainGraph,
    threads: usize,
    base: Option<&HashMap<String, Plain>>,
) -> std::result::Result<(HashMap<String, Plain>, Vec<Root>), String> {
    std::thread::scope(|s| {
        s.spawn(move || {
            let _pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .use_current_thread()
                .build()
                .map_err(|e| e.to_string())?;
            catch(|| -> std::result::Result<_, String> {
                let (graph, feeds) = g.build().map_err(|e| e.to_string())?;
                let exec = Executor::new(&graph).map_err(|e| e.to_string())?;
                let mut v = Values {
                    base,
                    kept: HashMap::new(),
                    diverged: HashSet::new(),
                    roots: Vec::new(),
                    before: Vec::new(),
                };
                let opts = RunOptions {
                    buffers: BufferPolicy::Zero,
                    ..RunOptions::default()
                };
                exec.run_with(&feeds, &mut v, &opts).map_err(|e| e.to_string())?;
                Ok((v.kept, v.roots))
            })?
        })
        .join()
        .map_err(|p| crate::guard::panic_text(&*p))?
    })
}

/// Findings of `thread_dependent` (or `nondeterministic`); `runs` counts
/// the graph runs. A run that cannot be made is not a finding (the
/// lockstep run reports a failing op).
pub fn check(graph: &Graph, feeds: &Feeds, threads: usize, runs: &mut usize) -> Result<Vec<Finding>> {
    let plain = PlainGraph::of(graph, feeds)?;
    *runs += 2;
    let Ok((base, _)) = run_on_pool(&plain, 1, None) else {
        return Ok(Vec::new());
    };
    let Ok((_, roots)) = run_on_pool(&plain, threads.max(2), Some(&base)) else {
        return Ok(Vec::new());
    };
    if roots.is_empty() {
        return Ok(Vec::new());
    }
    // The one-thread run once more: what differs there is not the threads.
    *runs += 1;
    let again: HashSet<String> = match run_on_pool(&plain, 1, Some(&base)) {
        Ok((_, r)) => r.into_iter().map(|r| r.0).collect(),
        Err(_) => HashSet::new(),
    };
    let threads = threads.max(2);
    Ok(roots
        .into_iter()
        .map(|(node, op, k, summary, mut details, unstable)| {
            details["threads"] = json!([1, threads]);
            let (kind, message) = if unstable || again.contains(&node) {
                (
                    Kind::NONDETERMINISTIC,
                    format!("output {k} differs between two calls on the same inputs with the same pool: the op is nondeterministic: {summary}"),
                )
            } else {
                (
                    Kind::THREAD_DEPENDENT,
                    format!(
                        "output {k} differs between a one-thread pool and a pool of {threads} threads while its inputs agree (the kernel's arithmetic follows the thread count; chunk by a fixed size instead): {summary}"
                    ),
                )
            };
            Finding::new(kind, message).at(node, op).with_output(k).with_details(details)
        })
        .collect())
}
