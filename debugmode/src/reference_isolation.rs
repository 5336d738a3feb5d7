//! The reference run's ops. An op that secretly writes its inputs, or hands
//! out a buffer it keeps and reuses, must not spoil the values the in-place
//! run is compared against. Copying every input and output of every op
//! guarantees that but costs two extra passes over memory per op, so the
//! reference first runs in *watch* mode: ops run on the values themselves,
//! and any write to a value after it was produced (every write bumps its
//! buffer's version) trips the watch. A tripped lockstep run is repeated
//! with a *copying* reference: each op on private copies of its inputs
//! (whole buffers, layouts and sharing kept, so even a write outside a view
//! stays private), its outputs copied as it returns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use vigil_engine::exec::Copier;
use vigil_engine::graph::Graph;
use vigil_engine::ops::{Arity, Attrs, Op, OpCtx, TypeInfo};
use vigil_engine::{Result, Tensor};

/// How the reference protects its values, and whether the watch tripped.
#[derive(Debug, Default)]
pub struct ReferenceIsolation {
    copy: bool,
    tripped: AtomicBool,
}

impl ReferenceIsolation {
    pub fn watch() -> Arc<ReferenceIsolation> {
        Arc::new(ReferenceIsolation::default())
    }

    pub fn copying() -> Arc<ReferenceIsolation> {
        Arc::new(ReferenceIsolation {
            copy: true,
            tripped: AtomicBool::new(false),
        })
    }

    pub fn is_copying(&self) -> bool {
        self.copy
    }

    /// Whether a reference value was written after it was produced.
    pub fn tripped(&self) -> bool {
        self.tripped.load(Ordering::Relaxed)
    }

    pub fn trip(&self) {
        self.tripped.store(true, Ordering::Relaxed);
    }
}

struct Isolated {
    op: Arc<dyn Op>,
    iso: Arc<ReferenceIsolation>,
}

impl Op for Isolated {
    fn name(&self) -> &str {
        self.op.name()
    }
    fn arity(&self) -> Arity {
        self.op.arity()
    }
    fn num_outputs(&self) -> usize {
        self.op.num_outputs()
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        self.op.infer(inputs)
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if !self.iso.copy {
            let before: Vec<u64> = inputs.iter().map(Tensor::version).collect();
            let out = self.op.compute(inputs, ctx)?;
            if inputs.iter().zip(&before).any(|(t, &v)| t.version() != v) {
                self.iso.trip();
            }
            return Ok(out);
        }
        let mut c = Copier::default();
        let private = inputs.iter().map(|t| c.copy(t)).collect::<Result<Vec<_>>>()?;
        let out = self.op.compute(&private, ctx)?;
        let mut c = Copier::default();
        out.iter().map(|t| c.copy(t)).collect()
    }
    // The reference declares no views and no destroys: in copy mode its
    // values share nothing, and in watch mode nothing writes them (or the
    // run is repeated in copy mode), so no ordering constraint is needed.
    fn attrs(&self) -> Attrs {
        self.op.attrs()
    }
}

/// The reference graph: every in-place op replaced by its pure twin, and
/// every op isolated as `iso` says. An in-place op without a twin is kept:
/// it writes its input, which trips a watching reference, and a copying
/// one runs it on a private copy, so it acts as a pure op.
pub fn reference(g: &Graph, iso: &Arc<ReferenceIsolation>) -> Result<Graph> {
    let (sources, mut specs, outputs) = g.to_specs();
    for s in &mut specs {
        let op = match s.op.pure_twin() {
            Some(twin) if !s.op.destroy_map().is_empty() => twin,
            _ => s.op.clone(),
        };
        s.op = Arc::new(Isolated { op, iso: iso.clone() });
    }
    Graph::new(g.name(), sources, specs, &outputs)
}
