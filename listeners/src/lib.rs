//! Listeners: observers of op execution that turn what they see into
//! findings.
//!
//! - [`NonInplaceValidationListener`]: ops change only the inputs their
//!   destroy_map declares, and only inside those inputs' views.
//! - [`ViewMapValidationListener`]: outputs share memory with inputs only as
//!   declared, never with each other, and declared must-views are views.
//!   Also: no output reuses memory another live value (or an earlier
//!   run's returned output) still holds (`undeclared_alias`).
//! - [`NumericsListener`]: output health per node; blames the op that first
//!   makes NaN or Inf.
//! - [`ListenerSet`]: runs several listeners as one, survives their panics
//!   and gathers their [`Finding`]s.
//! - [`broken`] and [`selftest`]: ops with known defects, and a run that
//!   shows each is caught with exactly its finding.

#![forbid(unsafe_code)]

mod alias;
pub mod broken;
mod diff;
pub mod finding;
pub mod hash;
pub mod noninplace;
pub mod numerics;
pub mod replay;
pub mod selftest;
pub mod set;
pub mod viewmap;

pub mod compare;
pub mod history;
pub mod profile;
pub mod record;
pub mod trace;

pub use finding::{at_op, Finding, Kind, Severity, Validator};
pub use history::{HistoryListener, ScoreListener};
pub use noninplace::{NonInplaceConfig, NonInplaceStats, NonInplaceValidationListener, Remember};
pub use numerics::{Health, NodeHealth, NumericsListener};
pub use profile::ProfilingListener;
pub use record::RecordingListener;
pub use replay::{replay_in_copy_mode, ReplayError, Snapshot};
pub use selftest::{run_selftest, SelftestResult};
pub use set::ListenerSet;
pub use trace::TracingListener;
pub use viewmap::ViewMapValidationListener;
pub use vigil_engine::tensor::overlap::{
    layouts_share_memory, tensors_share_memory, tensors_share_memory_bounded, Sharing,
};
