//! Input layouts: every op of the in-place graph is called again with each
//! of its inputs re-laid out: a C-contiguous copy, an F-order copy, a
//! reversed one (negative strides), and one inside a larger buffer at an
//! offset whose guard bands hold poison (NaN, or 0x5A bytes). Every variant
//! must give the op's original outputs (compared as lockstep compares). An
//! op that ignores its input's strides gives another answer on some
//! variant; one that reads past its view reads the poison.
//!
//! Before any variant, the op is called once more on its inputs as they
//! were: a result that differs then is `nondeterministic`, and the
//! variants would prove nothing. A call that fails or panics is not
//! available and proves nothing either.

use serde_json::json;
use vigil_engine::compare::{compare, Comparison};
use vigil_engine::exec::{At, Copier, Listener, OpEvent, RunOptions};
use vigil_engine::graph::Graph;
use vigil_engine::ops::OpCtx;
use vigil_engine::{BufferPolicy, Executor, Layout, Tensor};
use vigil_findings::{Finding, Kind};

use crate::config::DebugConfig;
use crate::error::Result;
use crate::guard::catch;
use crate::lockstep::{fresh, poison_buffer, summary, Feeds};

/// The layouts an input is handed in, by name.
pub const LAYOUTS: [&str; 4] = ["c_contiguous", "f_contiguous", "reversed", "guarded"];

/// Elements of poison on each side of a `guarded` input (at least one,
/// at most 1024, else as many as the input has).
fn guard_len(n: usize) -> usize {
    n.clamp(1, 1024)
}

/// A copy of `t`'s values laid out as `layout` says.
pub fn relaid(t: &Tensor, layout: &str) -> vigil_engine::Result<Tensor> {
    let shape = t.shape().to_vec();
    let n: usize = shape.iter().product();
    let c = Layout::contiguous(&shape);
    let (len, l) = match layout {
        "f_contiguous" => (n, Layout::f_contiguous(&shape)),
        "reversed" => {
            let strides: Vec<isize> = c.strides().iter().map(|s| -s).collect();
            (n, Layout::new(shape.clone(), strides, n.saturating_sub(1)))
        }
        "guarded" => {
            let g = guard_len(n);
            (n + 2 * g, Layout::new(shape.clone(), c.strides().to_vec(), g))
        }
        _ => (n, c),
    };
    let base = Tensor::zeros(t.dtype(), &[len])?;
    if layout == "guarded" {
        poison_buffer(&base)?;
    }
    let out = base.with_layout(l)?;
    out.assign(t)?;
    Ok(out)
}

/// One variant whose outputs differ from the original call's.
struct Differs {
    input: usize,
    layout: &'static str,
    output: usize,
    cmp: Comparison,
    /// The guarded copy differs from the C-contiguous one: the op read
    /// outside the view.
    outside: bool,
}

/// What the check saw at one node.
enum Seen {
    Nondeterministic { output: usize, cmp: Comparison },
    Layout(Vec<Differs>),
}

struct Watch<'c> {
    cfg: &'c DebugConfig,
    /// Private copies of the inputs of the op about to run.
    before: Option<Vec<Tensor>>,
    seen: Vec<(usize, Seen)>,
}

impl Watch<'_> {
    /// The op called on private copies of `inputs`, input `i` re-laid out
    /// as `layout` (none: as they were); `None` when it fails or panics.
    fn call(&mut self, ev: &OpEvent, inputs: &[Tensor], relay: Option<(usize, &str)>) -> Option<Vec<Tensor>> {
        let mut c = Copier::default();
        let mut args = Vec::with_capacity(inputs.len());
        for (j, t) in inputs.iter().enumerate() {
            args.push(match relay {
                Some((i, layout)) if i == j => relaid(t, layout).ok()?,
                _ => c.copy(t).ok()?,
            });
        }
        // Zeroed output buffers, as in the run: the variants differ only in
        // the input's layout.
        let _zero = vigil_engine::tensor::buffer_pool::with_policy(BufferPolicy::Zero);
        catch(|| ev.node.op.compute(&args, &mut OpCtx::new(&ev.node.name)))
            .ok()?
            .ok()
    }

    /// The first output of `got` that differs from `want`, compared as
    /// lockstep compares.
    fn differs(&self, got: &[Tensor], want: &[Tensor]) -> Option<(usize, Comparison)> {
        got.iter().zip(want).enumerate().find_map(|(k, (g, w))| {
            let c = compare(g, w, self.cfg.tolerance(w.dtype())).ok()?;
            (!c.is_close()).then_some((k, c))
        })
    }
}

impl Listener for Watch<'_> {
    // A body's nodes are checked through their control node's calls (the
    // body's events name the body graph's ids, not the run's).
    fn pre_op(&mut self, at: &At, ev: &OpEvent) {
        if at.in_body {
            return;
        }
        let mut c = Copier::default();
        self.before = ev
            .inputs
            .iter()
            .map(|t| c.copy(t))
            .collect::<vigil_engine::Result<_>>()
            .ok();
    }

    fn post_op(&mut self, at: &At, ev: &OpEvent) {
        if at.in_body {
            return;
        }
        let Some(before) = self.before.take() else { return };
        let Ok(want) = ev
            .outputs
            .iter()
            .map(Tensor::deep_copy)
            .collect::<vigil_engine::Result<Vec<_>>>()
        else {
            return;
        };
        // The same call again first: a different result rules the
        // variants out.
        let Some(again) = self.call(ev, &before, None) else {
            return;
        };
        if let Some((output, cmp)) = self.differs(&again, &want) {
            self.seen
                .push((ev.node_id, Seen::Nondeterministic { output, cmp }));
            return;
        }
        let mut found = Vec::new();
        for (i, t) in before.iter().enumerate() {
            if t.size() == 0 {
                continue;
            }
            // The C-contiguous result: the input as it was when it already
            // is a dense C-order buffer of its own.
            let dense = t.is_contiguous() && t.offset() == 0 && t.data_size() == t.size();
            let mut c_result = dense.then(|| want.clone());
            for layout in LAYOUTS {
                if layout == "c_contiguous" && dense {
                    continue;
                }
                let Some(got) = self.call(ev, &before, Some((i, layout))) else {
                    continue;
                };
                // The guarded copy has the C copy's strides; only what
                // lies around the view differs (nothing, or poison).
                let outside = match (layout, &c_result) {
                    ("guarded", Some(c)) => self.differs(&got, c).is_some(),
                    _ => false,
                };
                if let Some((output, cmp)) = self.differs(&got, &want) {
                    found.push(Differs {
                        input: i,
                        layout,
                        output,
                        cmp,
                        outside,
                    });
                }
                if layout == "c_contiguous" {
                    c_result = Some(got);
                }
            }
        }
        if !found.is_empty() {
            self.seen.push((ev.node_id, Seen::Layout(found)));
        }
    }
}

/// Findings of `layout_dependent` (and `nondeterministic`), one per node
/// at most.
pub fn check(graph: &Graph, feeds: &Feeds, cfg: &DebugConfig, runs: &mut usize) -> Result<Vec<Finding>> {
    *runs += 1;
    let (g, f) = fresh(graph, feeds)?;
    let exec = Executor::new(&g)?;
    let mut w = Watch {
        cfg,
        before: None,
        seen: Vec::new(),
    };
    let opts = RunOptions {
        buffers: BufferPolicy::Zero,
        ..RunOptions::default()
    };
    // A failure of the run itself is the lockstep run's to report.
    let _ = catch(|| exec.run_with(&f, &mut w, &opts));
    Ok(w.seen.into_iter().map(|(n, s)| finding(&g, n, s)).collect())
}

fn finding(g: &Graph, n: usize, seen: Seen) -> Finding {
    let node = g.node(n);
    let out_name = |k: usize| {
        node.outputs
            .get(k)
            .map(|&v| g.var(v).name.clone())
            .unwrap_or_default()
    };
    let in_name = |i: usize| {
        node.inputs
            .get(i)
            .map(|&v| g.var(v).name.clone())
            .unwrap_or_default()
    };
    match seen {
        Seen::Nondeterministic { output, cmp } => Finding::new(
            Kind::NONDETERMINISTIC,
            format!(
                "output {output} '{}' differs between two calls of the op on the same inputs: the op is nondeterministic: {}",
                out_name(output),
                summary(&cmp)
            ),
        )
        .at(node.name.clone(), node.op.name())
        .with_output(output)
        .with_details(json!({"var": out_name(output), "check": "layouts", "first": first(&cmp)})),
        Seen::Layout(found) => {
            let d = found.iter().find(|x| x.outside).unwrap_or(&found[0]);
            let message = if d.outside {
                format!(
                    "the op reads outside input {} '{}''s view: handed the input inside a larger buffer whose guard bands hold poison (NaN for floats, 0x5A bytes otherwise), output {} '{}' differs from its value on a C-contiguous copy (against the original call: {})",
                    d.input,
                    in_name(d.input),
                    d.output,
                    out_name(d.output),
                    summary(&d.cmp)
                )
            } else {
                format!(
                    "output {} '{}' changes when input {} '{}' is handed as a {} copy (the op ignores its strides or offset): {}",
                    d.output,
                    out_name(d.output),
                    d.input,
                    in_name(d.input),
                    describe(d.layout),
                    summary(&d.cmp)
                )
            };
            let all: Vec<_> = found
                .iter()
                .map(|x| json!({"input": x.input, "layout": x.layout, "output": x.output}))
                .collect();
            Finding::new(Kind::LAYOUT_DEPENDENT, message)
                .at(node.name.clone(), node.op.name())
                .with_input(d.input)
                .with_output(d.output)
                .with_details(json!({
                    "input": d.input,
                    "var": in_name(d.input),
                    "layout": d.layout,
                    "output": d.output,
                    "reads_outside_view": d.outside,
                    "first": first(&d.cmp),
                    "differing": all,
                }))
        }
    }
}

fn first(c: &Comparison) -> serde_json::Value {
    c.first
        .first()
        .map(|m| json!({"index": m.index, "got": vigil_findings::json_f64(m.got), "want": vigil_findings::json_f64(m.want)}))
        .unwrap_or(serde_json::Value::Null)
}

fn describe(layout: &str) -> &'static str {
    match layout {
        "c_contiguous" => "C-contiguous",
        "f_contiguous" => "F-order (column-major)",
        "reversed" => "reversed (negative strides)",
        _ => "guarded (inside a larger buffer at an offset)",
    }
}
