//! A set of listeners that acts as one: every hook goes to every active
//! member, a member that panics is reported and switched off, and the
//! members' findings are gathered in one place.
//!
//! Let the executor fire the op hooks, and fire the epoch and iteration
//! hooks from your own training loop:
//!
//! ```
//! use std::collections::HashMap;
//! use vigil_engine::exec::{At, Executor, Flow, Listener, Operation, RunOptions};
//! use vigil_engine::{graph::GraphBuilder, DType, Tensor};
//! use vigil_listeners::{
//!     ListenerSet, NonInplaceValidationListener, NumericsListener, Validator, ViewMapValidationListener,
//! };
//!
//! let b = GraphBuilder::new("demo");
//! let x = b.input("x", DType::F32, &[3]);
//! let y = x.exp()?.relu()?;
//! let graph = b.build(&[&y])?;
//! let exec = Executor::new(&graph)?;
//! let feeds = HashMap::from([("x".to_string(), Tensor::from_vec(&[3], vec![1.0f32, -2.0, 3.0])?)]);
//!
//! let mut set = ListenerSet::new()
//!     .with(NonInplaceValidationListener::new())
//!     .with(ViewMapValidationListener::new())
//!     .with(NumericsListener::new());
//!
//! // One execution: the executor fires operation_start/end and the op hooks.
//! exec.run_with(&feeds, &mut set, &RunOptions::default())?;
//!
//! // A training loop fires the epoch and iteration hooks itself.
//! for epoch in 0..3 {
//!     let at = At::new(Operation::Training).epoch(epoch);
//!     set.epoch_start(&at);
//!     for it in 0..2 {
//!         let at = at.iteration(it);
//!         set.iteration_start(&at);
//!         exec.run_with(&feeds, &mut set, &RunOptions { at, ..RunOptions::default() })?;
//!         set.iteration_done(&at, Some(0.5));
//!     }
//!     if set.epoch_end(&at) == Flow::Stop {
//!         break;
//!     }
//! }
//! assert!(set.take_findings().is_empty());
//! let checked = set.get::<NonInplaceValidationListener>().map(|l| l.stats().ops_checked);
//! assert_eq!(checked, Some(2 * 7));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::json;
use vigil_engine::exec::{At, Flow, Listener, Metrics, OpEvent, Operation, SweepWatch};
use vigil_engine::forward_listener_hooks_to_0;

use crate::finding::{Finding, Kind, Validator};

/// A plain listener, seen as a validator with no findings.
struct Plain<L>(L);

impl<L: Listener> Listener for Plain<L> {
    fn is_active(&self, op: Operation) -> bool {
        self.0.is_active(op)
    }
    fn epoch_end(&mut self, at: &At) -> Flow {
        self.0.epoch_end(at)
    }
    fn validation_done(&mut self, at: &At, metrics: &Metrics) -> Flow {
        self.0.validation_done(at, metrics)
    }
    fn required_variables(&self) -> Vec<String> {
        self.0.required_variables()
    }
    fn watches_sweeps(&self) -> SweepWatch {
        self.0.watches_sweeps()
    }
    vigil_engine::listener_unit_hooks!(forward_listener_hooks_to_0);
}

impl<L: Listener> Validator for Plain<L> {
    fn findings(&self) -> &[Finding] {
        &[]
    }
    fn take_findings(&mut self) -> Vec<Finding> {
        Vec::new()
    }
}

/// Each unit hook goes to every enabled member (see [`ListenerSet::each`]);
/// the end of a run or an iteration also collects the members' findings.
macro_rules! fan_out {
    ($($(#[doc = $doc:literal])* $name:ident(at: $at:ty $(, $arg:ident: $ty:ty)* $(,)?) => $ev:expr;)*) => {
        $(fn $name(&mut self, at: $at $(, $arg: $ty)*) {
            let ev: Option<&OpEvent> = $ev;
            self.each(stringify!($name), at, ev, |v| {
                v.$name(at $(, $arg)*);
                Flow::Continue
            });
            if matches!(stringify!($name), "operation_end" | "iteration_done") {
                self.collect_at(at);
            }
        })*
    };
}

/// A member as the set stores it: a validator that can be downcast.
trait Slot {
    fn v(&mut self) -> &mut dyn Validator;
    fn v_ref(&self) -> &dyn Validator;
    fn any(&self) -> &dyn Any;
    fn any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Validator + 'static> Slot for T {
    fn v(&mut self) -> &mut dyn Validator {
        self
    }
    fn v_ref(&self) -> &dyn Validator {
        self
    }
    fn any(&self) -> &dyn Any {
        self
    }
    fn any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

struct Member {
    name: String,
    slot: Box<dyn Slot>,
    enabled: bool,
}

/// Listeners composed into one; see the module documentation.
#[derive(Default)]
pub struct ListenerSet {
    members: Vec<Member>,
    findings: Vec<Finding>,
    case: Option<String>,
}

/// The text of a panic payload.
fn panic_message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_string()
    }
}

/// `vigil_listeners::numerics::NumericsListener` → `NumericsListener`.
fn short_type_name<T>() -> String {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_string()
}

impl ListenerSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a validator (its findings are collected).
    pub fn push<V: Validator + 'static>(&mut self, v: V) -> &mut Self {
        self.push_named(&short_type_name::<V>(), v)
    }

    /// Adds a validator under `name` (used in `listener_panic` findings).
    pub fn push_named<V: Validator + 'static>(&mut self, name: &str, v: V) -> &mut Self {
        self.members.push(Member {
            name: name.to_string(),
            slot: Box::new(v),
            enabled: true,
        });
        self
    }

    /// Adds a listener that produces no findings (a tracer, a profiler).
    pub fn push_listener<L: Listener + 'static>(&mut self, l: L) -> &mut Self {
        self.push_named(&short_type_name::<L>(), Plain(l))
    }

    /// Builder form of [`ListenerSet::push`].
    pub fn with<V: Validator + 'static>(mut self, v: V) -> Self {
        self.push(v);
        self
    }

    /// Builder form of [`ListenerSet::push_listener`].
    pub fn with_listener<L: Listener + 'static>(mut self, l: L) -> Self {
        self.push_listener(l);
        self
    }

    /// The case name stamped on collected findings that have none.
    pub fn set_case(&mut self, case: Option<String>) {
        self.case = case;
    }

    /// The first member of type `T`.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.members.iter().find_map(|m| {
            let a = m.slot.any();
            a.downcast_ref::<T>()
                .or_else(|| a.downcast_ref::<Plain<T>>().map(|p| &p.0))
        })
    }

    /// The first member of type `T`, mutably.
    pub fn get_mut<T: 'static>(&mut self) -> Option<&mut T> {
        for m in &mut self.members {
            let a = m.slot.any_mut();
            if a.is::<T>() {
                return a.downcast_mut::<T>();
            }
            if let Some(p) = a.downcast_mut::<Plain<T>>() {
                return Some(&mut p.0);
            }
        }
        None
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Names of members switched off after a panic.
    pub fn disabled(&self) -> Vec<&str> {
        self.members
            .iter()
            .filter(|m| !m.enabled)
            .map(|m| m.name.as_str())
            .collect()
    }

    /// Like [`ListenerSet::collect`], at a point of a run: in a training
    /// loop, each new finding is stamped with its epoch and iteration, and
    /// one already seen at an earlier iteration (the same defect: see
    /// [`Finding::same_defect`]) is folded into it, counted, with its last
    /// iteration, instead of repeated.
    pub fn collect_at(&mut self, at: &At) {
        let start = self.findings.len();
        self.collect();
        if !matches!(at.operation, Operation::Training | Operation::TrainingValidation) {
            return;
        }
        let now = vigil_findings::Iteration {
            epoch: at.epoch,
            iteration: at.iteration,
        };
        let new: Vec<Finding> = self.findings.drain(start..).collect();
        for mut f in new {
            match self
                .findings
                .iter_mut()
                .find(|e| e.seen.is_some() && e.same_defect(&f))
            {
                Some(e) => {
                    if let Some(s) = &mut e.seen {
                        s.count += 1;
                        s.last = now;
                    }
                }
                None => {
                    f.seen = Some(vigil_findings::Seen::once(now));
                    self.findings.push(f);
                }
            }
        }
    }

    /// Moves the members' findings into the set (done at the end of each
    /// run, epoch and iteration).
    pub fn collect(&mut self) {
        for m in &mut self.members {
            // A panicking take_findings loses that member's findings only.
            if let Ok(found) = catch_unwind(AssertUnwindSafe(|| m.slot.v().take_findings())) {
                self.findings.extend(found);
            }
        }
        if let Some(case) = &self.case {
            for f in self.findings.iter_mut().filter(|f| f.case.is_none()) {
                f.case = Some(case.clone());
            }
        }
    }

    /// Calls `f` on each enabled member active for `op`. A panic disables
    /// the member and becomes a `listener_panic` finding.
    fn each(
        &mut self,
        hook: &str,
        at: &At,
        ev: Option<&OpEvent>,
        mut f: impl FnMut(&mut dyn Validator) -> Flow,
    ) -> Flow {
        let mut flow = Flow::Continue;
        for m in &mut self.members {
            if !m.enabled {
                continue;
            }
            let result = catch_unwind(AssertUnwindSafe(|| {
                let v = m.slot.v();
                if v.is_active(at.operation) {
                    f(v)
                } else {
                    Flow::Continue
                }
            }));
            match result {
                Ok(Flow::Stop) => flow = Flow::Stop,
                Ok(Flow::Continue) => {}
                Err(payload) => {
                    m.enabled = false;
                    let msg = panic_message(payload.as_ref());
                    let mut finding = Finding::new(
                        Kind::LISTENER_PANIC,
                        format!("listener '{}' panicked in {hook} and was disabled: {msg}", m.name),
                    );
                    if let Some(ev) = ev {
                        finding.node = ev.node.name.clone();
                        finding.op = ev.op_name().to_string();
                    }
                    finding.case = self.case.clone();
                    finding.details = json!({
                        "listener": m.name,
                        "hook": hook,
                        "panic": msg,
                        "epoch": at.epoch,
                        "iteration": at.iteration,
                        "operation": at.operation,
                        "node_index": at.node_index,
                    });
                    self.findings.push(finding);
                    if let Ok(found) = catch_unwind(AssertUnwindSafe(|| m.slot.v().take_findings())) {
                        self.findings.extend(found);
                    }
                }
            }
        }
        flow
    }
}

impl Listener for ListenerSet {
    fn is_active(&self, op: Operation) -> bool {
        self.members.iter().any(|m| {
            // A member whose is_active panics counts as active; the next
            // hook catches it.
            m.enabled && catch_unwind(AssertUnwindSafe(|| m.slot.v_ref().is_active(op))).unwrap_or(true)
        })
    }
    fn epoch_end(&mut self, at: &At) -> Flow {
        let flow = self.each("epoch_end", at, None, |v| v.epoch_end(at));
        self.collect();
        flow
    }
    fn validation_done(&mut self, at: &At, metrics: &Metrics) -> Flow {
        let flow = self.each("validation_done", at, None, |v| v.validation_done(at, metrics));
        self.collect();
        flow
    }
    vigil_engine::listener_unit_hooks!(fan_out);
    /// Sweeps run only when every enabled member can watch them (also
    /// members inactive for the run: the set is not told its kind here).
    fn watches_sweeps(&self) -> SweepWatch {
        self.members
            .iter()
            .filter(|m| m.enabled)
            .map(|m| {
                catch_unwind(AssertUnwindSafe(|| m.slot.v_ref().watches_sweeps())).unwrap_or(SweepWatch::No)
            })
            .fold(SweepWatch::Edges, SweepWatch::and)
    }
    fn required_variables(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for m in self.members.iter().filter(|m| m.enabled) {
            if let Ok(vars) = catch_unwind(AssertUnwindSafe(|| m.slot.v_ref().required_variables())) {
                for v in vars {
                    if !out.contains(&v) {
                        out.push(v);
                    }
                }
            }
        }
        out
    }
}

impl Validator for ListenerSet {
    /// Findings collected so far (members' findings arrive at the end of
    /// each run, epoch and iteration; [`Validator::take_findings`] gathers
    /// everything first).
    fn findings(&self) -> &[Finding] {
        &self.findings
    }

    fn take_findings(&mut self) -> Vec<Finding> {
        self.collect();
        std::mem::take(&mut self.findings)
    }
}
