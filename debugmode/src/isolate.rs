//! The reference run's ops: each runs on private copies of its inputs, and
//! its outputs are copied as soon as it returns, so an op that secretly
//! writes its inputs, or hands out a buffer it keeps and reuses, cannot
//! spoil the values the in-place run is compared against.

use std::sync::Arc;

use vigil_engine::exec::Copier;
use vigil_engine::graph::Graph;
use vigil_engine::ops::{Arity, Attrs, Op, OpCtx, TypeInfo};
use vigil_engine::{Result, Tensor};

struct Isolated(Arc<dyn Op>);

impl Op for Isolated {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn arity(&self) -> Arity {
        self.0.arity()
    }
    fn num_outputs(&self) -> usize {
        self.0.num_outputs()
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        self.0.infer(inputs)
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        // Whole buffers, layouts kept and sharing between inputs kept, so
        // even an op that writes outside its inputs' views only touches
        // its private copy.
        let mut c = Copier::default();
        let private = inputs.iter().map(|t| c.copy(t)).collect::<Result<Vec<_>>>()?;
        let out = self.0.compute(&private, ctx)?;
        // Outputs too keep their whole buffer (a view's neighbours stay
        // reachable for the next op, as in the in-place run).
        let mut c = Copier::default();
        out.iter().map(|t| c.copy(t)).collect()
    }
    // Copies share nothing: the reference declares no views and no
    // destroys, so the destroy handler adds no orderings of its own.
    fn attrs(&self) -> Attrs {
        self.0.attrs()
    }
}

/// The reference graph: every in-place op replaced by its pure twin, and
/// every op isolated. An in-place op without a twin is kept: isolated, it
/// destroys only its private copy, so it acts as a pure op.
pub fn reference(g: &Graph) -> Result<Graph> {
    let (sources, mut specs, outputs) = g.to_specs();
    for s in &mut specs {
        let op = match s.op.pure_twin() {
            Some(twin) if !s.op.destroy_map().is_empty() => twin,
            _ => s.op.clone(),
        };
        s.op = Arc::new(Isolated(op));
    }
    Graph::new(g.name(), sources, specs, &outputs)
}
