//! Stops training when the validation loss has not improved for a while.

use vigil_engine::exec::{At, Flow, Listener, Metrics};

/// `Flow::Stop` after `patience` validations without a loss below the
/// best by more than `min_delta`.
pub struct EarlyStopping {
    patience: usize,
    min_delta: f64,
    best: Option<f64>,
    waited: usize,
}

impl EarlyStopping {
    pub fn new(patience: usize, min_delta: f64) -> EarlyStopping {
        EarlyStopping {
            patience,
            min_delta,
            best: None,
            waited: 0,
        }
    }

    /// The best validation loss seen.
    pub fn best(&self) -> Option<f64> {
        self.best
    }
}

impl Listener for EarlyStopping {
    fn validation_done(&mut self, _at: &At, metrics: &Metrics) -> Flow {
        let Some(loss) = metrics.loss else {
            return Flow::Continue;
        };
        if self.best.is_none_or(|b| loss < b - self.min_delta) {
            self.best = Some(loss);
            self.waited = 0;
            return Flow::Continue;
        }
        self.waited += 1;
        if self.waited >= self.patience {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
}
