//! `vigil explain`: the graph in execution order, with each node's declared
//! maps, the in-place rewrite applied or refused (and why), the buffer each
//! output lives in, and the estimated peak live bytes with and without the
//! pass.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::case::{load_graph, CasePaths};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, Color, ContentArrangement, Table};
use serde::Serialize;
use vigil_engine::inplace::{self, Candidate};
use vigil_engine::memory;
use vigil_engine::{DestroyHandler, Executor, Graph, OpRegistry};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Args)]
pub struct ExplainArgs {
    /// A graph.json, or a suite case directory.
    graph: PathBuf,
    /// table, or json (`vigil-explain/1`, see docs/explain-format.md).
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

/// The stable JSON form (`vigil-explain/1`, see docs/explain-format.md).
#[derive(Serialize)]
struct Explain {
    format: &'static str,
    graph: String,
    nodes_total: usize,
    nodes_inplace: usize,
    /// Nodes that continue the fused sweep of the node before them.
    nodes_swept: usize,
    peak_live_bytes: Peak,
    nodes: Vec<NodeExplain>,
}

#[derive(Serialize)]
struct Peak {
    without_pass: u64,
    with_pass: u64,
    /// Buffers of unknown size (dynamic shapes), not counted above.
    unknown_buffers: usize,
}

#[derive(Serialize)]
struct NodeExplain {
    position: usize,
    name: String,
    op: String,
    /// The op before the pass, when the pass rewrote it.
    rewritten_from: Option<String>,
    inplace: bool,
    /// Continues the fused sweep of the node before it in plain and
    /// validate runs.
    sweeps_with_previous: bool,
    inputs: Vec<String>,
    view_map: Vec<(usize, usize)>,
    destroy_map: Vec<(usize, usize)>,
    outputs: Vec<OutputExplain>,
    candidates: Vec<Candidate>,
}

#[derive(Serialize)]
struct OutputExplain {
    name: String,
    dtype: String,
    shape: Option<Vec<i64>>,
    /// The variable whose allocation this output lives in.
    buffer: String,
}

fn build(graph: &Graph) -> Result<Explain> {
    let pure_order = DestroyHandler::new(graph).validate()?;
    let pure_plan = memory::plan(graph, &pure_order);
    let pass = inplace::run(graph)?;
    let g = &pass.graph;
    let exec = Executor::new(g)?;
    let order = exec.order().to_vec();
    let plan = memory::plan(g, &order);
    let mut nodes = Vec::new();
    for (position, &id) in order.iter().enumerate() {
        let n = g.node(id);
        let decision = pass.decisions.iter().find(|d| d.node == n.name);
        let destroy_map = n.op.destroy_map();
        nodes.push(NodeExplain {
            position,
            name: n.name.clone(),
            op: n.op.name().to_string(),
            rewritten_from: decision
                .filter(|d| d.rewritten_to.is_some())
                .map(|d| d.op.clone()),
            inplace: !destroy_map.is_empty(),
            sweeps_with_previous: exec.continues_sweep(position),
            inputs: n.inputs.iter().map(|&v| g.var(v).name.clone()).collect(),
            view_map: n.op.view_map(),
            destroy_map,
            outputs: n
                .outputs
                .iter()
                .map(|&v| OutputExplain {
                    name: g.var(v).name.clone(),
                    dtype: g.var(v).ty.dtype.to_string(),
                    shape: g.var(v).ty.shape.clone(),
                    buffer: plan.buffers[plan.buffer_of[v]].owner.clone(),
                })
                .collect(),
            candidates: decision.map(|d| d.candidates.clone()).unwrap_or_default(),
        });
    }
    Ok(Explain {
        format: "vigil-explain/1",
        graph: g.name().to_string(),
        nodes_total: order.len(),
        nodes_inplace: nodes.iter().filter(|n| n.inplace).count(),
        nodes_swept: nodes.iter().filter(|n| n.sweeps_with_previous).count(),
        peak_live_bytes: Peak {
            without_pass: pure_plan.peak_bytes,
            with_pass: plan.peak_bytes,
            unknown_buffers: plan.unknown_buffers,
        },
        nodes,
    })
}

fn table(e: &Explain) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec![
        "#",
        "node",
        "op",
        "maps",
        "in-place rewrite",
        "outputs → buffer",
    ]);
    for n in &e.nodes {
        let mut maps = Vec::new();
        if !n.view_map.is_empty() {
            maps.push(format!("view {}", fmt_map(&n.view_map)));
        }
        if !n.destroy_map.is_empty() {
            maps.push(format!("destroy {}", fmt_map(&n.destroy_map)));
        }
        let mut rewrite: Vec<String> = Vec::new();
        if let Some(from) = &n.rewritten_from {
            rewrite.push(format!(
                "{from} → {} (destroys {})",
                n.op, n.inputs[n.destroy_map[0].1]
            ));
        }
        if n.sweeps_with_previous {
            rewrite.push("↑ one sweep with the node above".to_string());
        }
        for c in n.candidates.iter().filter(|c| !c.accepted) {
            if let Some(r) = &c.refused {
                rewrite.push(format!(
                    "✗ {} on '{}': {} [{}]",
                    c.op,
                    c.var,
                    r.message(),
                    r.code()
                ));
            }
        }
        let outs: Vec<String> = n
            .outputs
            .iter()
            .map(|o| {
                let shape = o
                    .shape
                    .as_ref()
                    .map(|s| format!("{s:?}"))
                    .unwrap_or_else(|| "?".into());
                if o.buffer == o.name {
                    format!("{} {} {shape} (own)", o.name, o.dtype)
                } else {
                    format!("{} {} {shape} → {}", o.name, o.dtype, o.buffer)
                }
            })
            .collect();
        let op = Cell::new(format!("{}({})", n.op, n.inputs.join(", ")));
        t.add_row(vec![
            Cell::new(n.position),
            Cell::new(&n.name),
            if n.inplace { op.fg(Color::Yellow) } else { op },
            Cell::new(maps.join("\n")),
            Cell::new(rewrite.join("\n")),
            Cell::new(outs.join("\n")),
        ]);
    }
    let p = &e.peak_live_bytes;
    let unknown = if p.unknown_buffers > 0 {
        format!(" ({} buffers of dynamic shape not counted)", p.unknown_buffers)
    } else {
        String::new()
    };
    let swept = if e.nodes_swept > 0 {
        format!(", {} sweeping with the node above", e.nodes_swept)
    } else {
        String::new()
    };
    format!(
        "{t}\n{}: {}, {} in place{swept}. Estimated peak live bytes: {} without the pass, {} with it{unknown}.\n",
        e.graph,
        vigil_reports::plural(e.nodes_total as u64, "node"),
        e.nodes_inplace,
        p.without_pass,
        p.with_pass
    )
}

fn fmt_map(m: &[(usize, usize)]) -> String {
    m.iter()
        .map(|(o, i)| format!("out{o}←in{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn run(a: ExplainArgs, registry: &OpRegistry) -> Result<ExitCode> {
    let case = CasePaths::resolve(&a.graph)?;
    let graph = load_graph(&case.graph, registry)?;
    let e = build(&graph).with_context(|| case.graph.display().to_string())?;
    match a.format {
        Format::Table => super::emit(&table(&e))?,
        Format::Json => super::emit(&format!("{}\n", serde_json::to_string_pretty(&e)?))?,
    }
    Ok(ExitCode::SUCCESS)
}
