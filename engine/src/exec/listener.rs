//! The hooks an executor (or a user's training loop) fires. Every hook has
//! a no-op default, so a listener implements only what it needs.

use serde::{Deserialize, Serialize};

use crate::graph::{Graph, Node, NodeId, VarId};
use crate::tensor::Tensor;

/// What kind of run a hook belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Training,
    TrainingValidation,
    #[default]
    Inference,
    Evaluation,
}

/// Where in a run a hook fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct At {
    pub epoch: usize,
    pub iteration: usize,
    pub operation: Operation,
    /// Position of the current node in the execution order, for op hooks.
    pub node_index: Option<usize>,
}

impl At {
    pub fn new(operation: Operation) -> At {
        At {
            operation,
            ..At::default()
        }
    }
    pub fn epoch(mut self, epoch: usize) -> At {
        self.epoch = epoch;
        self
    }
    pub fn iteration(mut self, iteration: usize) -> At {
        self.iteration = iteration;
        self
    }
}

/// Whether a training loop should go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// One op execution as a hook sees it: the node with its op and declared
/// maps, and the input and output tensors (with buffer ids and layouts).
pub struct OpEvent<'a> {
    pub graph: &'a Graph,
    pub node_id: NodeId,
    pub node: &'a Node,
    pub inputs: &'a [Tensor],
    /// Empty in `pre_op`.
    pub outputs: &'a [Tensor],
}

impl OpEvent<'_> {
    pub fn op_name(&self) -> &str {
        self.node.op.name()
    }
    /// Input slots that the op declares it destroys.
    pub fn destroyed_inputs(&self) -> Vec<usize> {
        self.node.op.destroy_map().iter().map(|&(_, i)| i).collect()
    }
}

/// Observer of runs. Hooks take `&mut self`; a [`Listener`] that wants to
/// stop training returns [`Flow::Stop`] from `epoch_end` or `validation_done`.
#[allow(unused_variables)]
pub trait Listener {
    /// Whether this listener wants hooks for runs of kind `op`.
    fn is_active(&self, op: Operation) -> bool {
        true
    }
    /// A whole run (fit, evaluation, or one graph execution) starts.
    fn operation_start(&mut self, at: &At, graph: &Graph) {}
    fn operation_end(&mut self, at: &At, graph: &Graph) {}
    fn epoch_start(&mut self, at: &At) {}
    fn epoch_end(&mut self, at: &At) -> Flow {
        Flow::Continue
    }
    fn validation_done(&mut self, at: &At) -> Flow {
        Flow::Continue
    }
    fn iteration_start(&mut self, at: &At) {}
    /// An iteration ends; `loss` is set when training.
    fn iteration_done(&mut self, at: &At, loss: Option<f64>) {}
    /// Inputs are bound; the op has not run.
    fn pre_op(&mut self, at: &At, ev: &OpEvent) {}
    /// The op ran; outputs are ready.
    fn post_op(&mut self, at: &At, ev: &OpEvent) {}
    /// Once per output of each op, after `post_op`.
    fn activation_available(&mut self, at: &At, ev: &OpEvent, output: usize, value: &Tensor) {}
    /// The executor released variable `var` (its last reader ran). `freed`
    /// is true when no live value holds its buffer any more, so the memory
    /// is dead for the rest of the run (unless the caller, a constant or a
    /// kept output still holds it).
    fn value_released(&mut self, at: &At, graph: &Graph, var: VarId, value: &Tensor, freed: bool) {}
    /// A parameter is about to be overwritten with `new_value`.
    fn pre_update(&mut self, at: &At, param: &str, old: &Tensor, new_value: &Tensor) {}
    /// Variables this listener needs kept alive until the run ends.
    fn required_variables(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A listener that does nothing.
pub struct NoListener;
impl Listener for NoListener {
    fn is_active(&self, _: Operation) -> bool {
        false
    }
}
