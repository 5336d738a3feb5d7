//! The reference run's ops: each runs on private copies of its inputs, and
//! its outputs are copied as soon as it returns, so an op that secretly
//! writes its inputs, or hands out a buffer it keeps and reuses, cannot
//! spoil the values the in-place run is compared against.

use std::sync::Arc;

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
        let private = inputs.iter().map(Tensor::deep_copy).collect::<Result<Vec<_>>>()?;
        let out = self.0.compute(&private, ctx)?;
        out.iter().map(Tensor::deep_copy).collect()
    }
    // Copies share nothing: the reference declares no views and no
    // destroys, so the destroy handler adds no orderings of its own.
    fn attrs(&self) -> Attrs {
        self.0.attrs()
    }
}

/// `pure` with every op isolated.
pub fn isolate(pure: &Graph) -> Result<Graph> {
    let (sources, mut specs, outputs) = pure.to_specs();
    for s in &mut specs {
        s.op = Arc::new(Isolated(s.op.clone()));
    }
    Graph::new(pure.name(), sources, specs, &outputs)
}
