//! The hooks an executor (or a user's training loop) fires. Every hook has
//! a no-op default, so a listener implements only what it needs.

use serde::{Deserialize, Serialize};

use smallvec::SmallVec;

use crate::exec::fuse::SweptOutput;
use crate::exec::live::LiveValues;
use crate::graph::{Graph, Node, NodeId};
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
    /// The event comes from a control node's body (`if`, `loop`, `scan`):
    /// its node and variable ids are the body graph's (`OpEvent::graph`),
    /// not the run's, so a listener keyed by the run's ids skips it.
    pub in_body: bool,
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

/// What a validation pass measured (either may be absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    pub loss: Option<f64>,
    /// Fraction of examples classified correctly, in [0, 1].
    pub accuracy: Option<f64>,
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
    /// The run's live values. In `post_op` the outputs are not among them
    /// yet, and the inputs still are.
    pub live: &'a LiveValues,
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

/// How a listener can watch a fused sweep (`exec::fuse`): nodes that run a
/// tile at a time, so that the values between them are never whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SweepWatch {
    /// It needs each node's whole inputs and outputs: while it is active,
    /// runs go node by node. The default.
    No,
    /// `pre_sweep` and `post_sweep` are enough.
    Edges,
    /// As `Edges`, and it reads each swept node's output summary
    /// ([`SweepEvent::outputs`]).
    Summaries,
}

impl SweepWatch {
    /// What two listeners need together: one that cannot watch a sweep
    /// stops sweeps for both.
    pub fn and(self, other: SweepWatch) -> SweepWatch {
        if self == SweepWatch::No || other == SweepWatch::No {
            SweepWatch::No
        } else {
            self.max(other)
        }
    }
}

/// A fused sweep as `pre_sweep` and `post_sweep` see it.
pub struct SweepEvent<'a> {
    pub graph: &'a Graph,
    /// The swept nodes in order; the first runs at `position`.
    pub nodes: &'a [NodeId],
    pub position: usize,
    /// The first node's input 0, as it reads it: `value` itself, or, when
    /// the first node is pure (as `sigmoid` in SiLU's `x · sigmoid(x)`),
    /// the value the sweep reads without writing.
    pub input: &'a Tensor,
    /// Whether the first node is folded into the second: pure, its output
    /// (the second node's operand) never exists, and the second overwrites
    /// the first's input (`x *= sigmoid(x)`).
    pub folded: bool,
    /// The swept buffer: before the sweep, the first node's input 0 (or,
    /// when that is not `input`, a fresh buffer); after it, the last node's
    /// output (every node's output 0 is this buffer, but a folded node's).
    pub value: &'a Tensor,
    /// After the sweep, each node's output summary, when a listener asked
    /// for them ([`SweepWatch::Summaries`]); else empty.
    pub outputs: &'a [SweptOutput],
    /// The run's live values: every input of every swept node, as long as
    /// the sweep's hooks run.
    pub live: &'a LiveValues,
}

impl SweepEvent<'_> {
    /// Whether the `k`-th swept node's output is [`Self::value`] (a folded
    /// node's never exists).
    pub fn binds(&self, k: usize) -> bool {
        k > 0 || !self.folded
    }

    /// The inputs of the `k`-th swept node. The first node's input 0 is
    /// [`Self::input`]; a later node's is [`Self::value`]: the right
    /// buffer and layout, but the values of the sweep's edge, not those
    /// the node read. A folded node's output (the next node's operand) is
    /// left out.
    pub fn inputs(&self, k: usize) -> SmallVec<[Tensor; 4]> {
        let node = self.graph.node(self.nodes[k]);
        node.inputs
            .iter()
            .enumerate()
            .filter_map(|(i, &v)| match i {
                0 if k == 0 => Some(self.input),
                0 => Some(self.value),
                _ => self.live.value(v),
            })
            .cloned()
            .collect()
    }

    /// The `k`-th swept node as an op hook would see it, with `inputs` from
    /// [`Self::inputs`] and its output [`Self::value`] (none for a folded
    /// node): for checks of buffers, layouts and declared maps, which a
    /// sweep keeps, not of values.
    pub fn op_event<'e>(&'e self, k: usize, inputs: &'e [Tensor]) -> OpEvent<'e> {
        let node_id = self.nodes[k];
        let outputs = if self.binds(k) {
            std::slice::from_ref(self.value)
        } else {
            &[]
        };
        OpEvent {
            graph: self.graph,
            node_id,
            node: self.graph.node(node_id),
            inputs,
            outputs,
            live: self.live,
        }
    }
}

/// Calls macro `$m` with every hook of [`Listener`] that returns nothing,
/// each as `docs name(arg: Type, ...) => event;` where `event` is the
/// [`OpEvent`] argument (`Some(ev)`) or `None`. The trait's default methods
/// and every forwarding listener (adapters, sets) are expanded from this one
/// list, so a new hook is one edit here.
#[macro_export]
macro_rules! listener_unit_hooks {
    ($m:ident) => {
        $m! {
            /// A whole run (fit, evaluation, or one graph execution) starts.
            operation_start(at: &$crate::exec::At, graph: &$crate::graph::Graph) => None;
            /// A whole run ends (also after an op failed).
            operation_end(at: &$crate::exec::At, graph: &$crate::graph::Graph) => None;
            epoch_start(at: &$crate::exec::At) => None;
            iteration_start(at: &$crate::exec::At) => None;
            /// An iteration ends; `loss` is set when training.
            iteration_done(at: &$crate::exec::At, loss: Option<f64>) => None;
            /// Inputs are bound; the op has not run.
            pre_op(at: &$crate::exec::At, ev: &$crate::exec::OpEvent) => Some(ev);
            /// The op ran; outputs are ready.
            post_op(at: &$crate::exec::At, ev: &$crate::exec::OpEvent) => Some(ev);
            /// A fused sweep is about to run, in place of its nodes'
            /// `pre_op` (only while every active listener watches sweeps).
            pre_sweep(at: &$crate::exec::At, ev: &$crate::exec::SweepEvent) => None;
            /// The sweep ran, in place of its nodes' `post_op` and
            /// `activation_available`.
            post_sweep(at: &$crate::exec::At, ev: &$crate::exec::SweepEvent) => None;
            /// Once per output of each op, after `post_op`.
            activation_available(
                at: &$crate::exec::At,
                ev: &$crate::exec::OpEvent,
                output: usize,
                value: &$crate::Tensor
            ) => Some(ev);
            /// The executor released variable `var` (its last reader ran).
            /// `freed` is true when no live value holds its buffer any more,
            /// so the memory is dead for the rest of the run (unless the
            /// caller, a constant or a kept output still holds it).
            value_released(
                at: &$crate::exec::At,
                graph: &$crate::graph::Graph,
                var: $crate::graph::VarId,
                value: &$crate::Tensor,
                freed: bool
            ) => None;
            /// A parameter is about to be overwritten with `new_value`.
            pre_update(at: &$crate::exec::At, param: &str, old: &$crate::Tensor, new_value: &$crate::Tensor) => None;
        }
    };
}

/// The trait's do-nothing defaults of the unit hooks.
macro_rules! default_hooks {
    ($($(#[doc = $doc:literal])* $name:ident($($arg:ident: $ty:ty),* $(,)?) => $ev:expr;)*) => {
        $($(#[doc = $doc])* fn $name(&mut self, $($arg: $ty),*) {})*
    };
}

/// Forwards every unit hook to `self.0`, for adapters that wrap one
/// listener: `vigil_engine::listener_unit_hooks!(forward_listener_hooks_to_0);`
#[macro_export]
macro_rules! forward_listener_hooks_to_0 {
    ($($(#[doc = $doc:literal])* $name:ident($($arg:ident: $ty:ty),* $(,)?) => $ev:expr;)*) => {
        $(fn $name(&mut self, $($arg: $ty),*) {
            self.0.$name($($arg),*)
        })*
    };
}

/// Observer of runs. Hooks take `&mut self`; a [`Listener`] that wants to
/// stop training returns [`Flow::Stop`] from `epoch_end` or `validation_done`.
#[allow(unused_variables)]
pub trait Listener {
    /// Whether this listener wants hooks for runs of kind `op`.
    fn is_active(&self, op: Operation) -> bool {
        true
    }
    fn epoch_end(&mut self, at: &At) -> Flow {
        Flow::Continue
    }
    fn validation_done(&mut self, at: &At, metrics: &Metrics) -> Flow {
        Flow::Continue
    }
    /// Whether runs may sweep while this listener is active, and what it
    /// needs to see of a sweep (see [`SweepWatch`]).
    fn watches_sweeps(&self) -> SweepWatch {
        SweepWatch::No
    }
    /// Variables this listener needs kept alive until the run ends.
    fn required_variables(&self) -> Vec<String> {
        Vec::new()
    }
    crate::listener_unit_hooks!(default_hooks);
}

/// A listener that does nothing.
pub struct NoListener;
impl Listener for NoListener {
    fn is_active(&self, _: Operation) -> bool {
        false
    }
}
