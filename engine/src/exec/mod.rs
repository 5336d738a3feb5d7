//! Running graphs: the executor and the listener hooks it fires.

mod executor;
mod listener;

pub use executor::{Executor, FreeEvent, Prealloc, RunOptions, RunOutput, RunStats};
pub use listener::{At, Flow, Listener, NoListener, OpEvent, Operation};
