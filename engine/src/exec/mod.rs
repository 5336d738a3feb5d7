//! Running graphs: the executor and the listener hooks it fires.

mod executor;
mod fuse;
mod layout;
mod listener;
mod live;
mod prepared;
mod snapshot;
mod updates;

pub use executor::{
    destroyed_sources, Cursor, Executor, FreeEvent, Prealloc, RunOptions, RunOutput, RunStats, Step, TwinStep,
};
pub use fuse::SweptOutput;
pub use listener::{At, Flow, Listener, Metrics, NoListener, OpEvent, Operation, SweepEvent, SweepWatch};
pub use live::LiveValues;
pub use prepared::Prepared;

/// A graph's input values by name: what a run is fed.
pub type Feeds = std::collections::HashMap<String, crate::tensor::Tensor>;
pub use snapshot::{copy_destroyed, copy_values, Copier, Lent, Snapshot};
pub use updates::updated_parameters;
