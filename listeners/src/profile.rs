//! ProfilingListener: time per op, aggregated by op name, and a Chrome
//! trace-event file that opens in Perfetto or chrome://tracing.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;
use vigil_engine::exec::{At, Listener, OpEvent, SweepEvent, SweepWatch};
use vigil_engine::Graph;

/// Aggregate timing of one op name.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OpProfile {
    pub op: String,
    pub count: u64,
    pub total_us: f64,
    pub mean_us: f64,
    pub min_us: f64,
    pub max_us: f64,
}

/// One executed op, for the trace.
#[derive(Clone, Debug, Serialize)]
pub struct OpSpan {
    pub node: String,
    pub op: String,
    pub start_us: f64,
    pub dur_us: f64,
    /// The op ran in a fused sweep: the sweep's time is split evenly over
    /// its nodes, which ran interleaved, a tile at a time.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub swept: bool,
}

#[derive(Default)]
pub struct ProfilingListener {
    origin: Option<Instant>,
    started: Option<Instant>,
    spans: Vec<OpSpan>,
}

impl ProfilingListener {
    pub fn new() -> ProfilingListener {
        ProfilingListener::default()
    }

    /// Every op executed so far, in order.
    pub fn spans(&self) -> &[OpSpan] {
        &self.spans
    }

    /// Count, mean, min and max time per op name, slowest total first.
    pub fn summary(&self) -> Vec<OpProfile> {
        let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for s in &self.spans {
            by.entry(&s.op).or_default().push(s.dur_us);
        }
        let mut out: Vec<OpProfile> = by
            .into_iter()
            .map(|(op, d)| {
                let total: f64 = d.iter().sum();
                OpProfile {
                    op: op.to_string(),
                    count: d.len() as u64,
                    total_us: total,
                    mean_us: total / d.len() as f64,
                    min_us: d.iter().copied().fold(f64::INFINITY, f64::min),
                    max_us: d.iter().copied().fold(0.0, f64::max),
                }
            })
            .collect();
        out.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.op.cmp(&b.op)));
        out
    }

    /// The trace in Chrome's trace-event format (complete events, `ph: "X"`).
    pub fn chrome_trace(&self) -> serde_json::Value {
        let events: Vec<_> = self
            .spans
            .iter()
            .map(|s| {
                json!({"name": s.op, "cat": "op", "ph": "X", "ts": s.start_us, "dur": s.dur_us,
                       "pid": 1, "tid": 1, "args": {"node": s.node, "swept": s.swept}})
            })
            .collect();
        json!({"traceEvents": events, "displayTimeUnit": "ms"})
    }

    pub fn write_chrome_trace(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, serde_json::to_vec(&self.chrome_trace())?)
    }

    /// The start (from the first op) and duration of what `pre_op` or
    /// `pre_sweep` started, in microseconds.
    fn stop(&mut self) -> Option<(f64, f64)> {
        let end = Instant::now();
        let start = self.started.take()?;
        let origin = *self.origin.get_or_insert(start);
        Some((us(start.duration_since(origin)), us(end.duration_since(start))))
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

impl Listener for ProfilingListener {
    fn operation_start(&mut self, _at: &At, _graph: &Graph) {
        self.origin.get_or_insert_with(Instant::now);
    }

    fn pre_op(&mut self, _at: &At, _ev: &OpEvent) {
        self.started = Some(Instant::now());
    }

    fn post_op(&mut self, _at: &At, ev: &OpEvent) {
        let Some((start_us, dur_us)) = self.stop() else {
            return;
        };
        self.spans.push(OpSpan {
            node: ev.node.name.clone(),
            op: ev.op_name().to_string(),
            start_us,
            dur_us,
            swept: false,
        });
    }

    fn watches_sweeps(&self) -> SweepWatch {
        SweepWatch::Edges
    }

    fn pre_sweep(&mut self, _at: &At, _ev: &SweepEvent) {
        self.started = Some(Instant::now());
    }

    fn post_sweep(&mut self, _at: &At, ev: &SweepEvent) {
        let Some((t0, dur)) = self.stop() else { return };
        let each = dur / ev.nodes.len().max(1) as f64;
        for (k, &n) in ev.nodes.iter().enumerate() {
            let node = ev.graph.node(n);
            self.spans.push(OpSpan {
                node: node.name.clone(),
                op: node.op.name().to_string(),
                start_us: t0 + k as f64 * each,
                dur_us: each,
                swept: true,
            });
        }
    }
}
