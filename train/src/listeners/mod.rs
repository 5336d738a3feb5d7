//! Training policies as listeners: early stopping and learning-rate
//! schedules need no special case in the Trainer.

mod early;
mod schedule;

pub use early::EarlyStopping;
pub use schedule::StepDecay;
