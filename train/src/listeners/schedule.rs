//! A step-decay learning-rate schedule, applied at each epoch start.

use vigil_engine::exec::{At, Listener};

use crate::optim::LearningRate;

/// `lr = base · factor^⌊epoch / every⌋`.
pub struct StepDecay {
    lr: LearningRate,
    base: f64,
    every: usize,
    factor: f64,
}

impl StepDecay {
    /// Schedules `lr` (the optimizer's shared rate), starting from its
    /// current value.
    pub fn new(lr: LearningRate, every: usize, factor: f64) -> StepDecay {
        StepDecay {
            base: lr.get(),
            lr,
            every: every.max(1),
            factor,
        }
    }
}

impl Listener for StepDecay {
    fn epoch_start(&mut self, at: &At) {
        self.lr
            .set(self.base * self.factor.powi((at.epoch / self.every) as i32));
    }
}
