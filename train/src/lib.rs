//! Training with Vigil's listeners: optimizers whose parameter and state
//! updates are in-place ops (each fires `pre_update` first), a [`Trainer`]
//! that fires every training hook, and early stopping and learning-rate
//! schedules as plain listeners. See `docs/training.md`.

#![forbid(unsafe_code)]

mod error;
pub mod listeners;
pub mod optim;
mod step;
mod trainer;

pub use error::{Result, TrainError};
pub use listeners::{EarlyStopping, StepDecay};
pub use optim::{Adam, LearningRate, Optimizer, Sgd};
pub use step::{build_step, parameters};
pub use trainer::{Feeds, FitSummary, Trainer, Validation};
pub use vigil_engine::exec::updated_parameters;

/// `docs/training.md`, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../docs/training.md")]
pub struct TrainingGuide;
