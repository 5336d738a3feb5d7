//! The Trainer: runs the step graph over batches for some epochs and fires
//! every training hook, so listeners work in a training loop unchanged.

use std::rc::Rc;

use vigil_engine::exec::{At, Executor, Flow, Listener, Metrics, Operation, Prepared, RunOptions};
use vigil_engine::Graph;

use crate::error::{Result, TrainError};
use crate::optim::Optimizer;
use crate::step::build_step;

/// Named input values of one batch.
pub use vigil_engine::Feeds;

/// A held-out set: feeds for the forward graph, the logits output and the
/// labels feed (i64 class ids) accuracy is measured against.
pub struct Validation {
    pub feeds: Feeds,
    pub logits: String,
    pub labels: String,
}

/// What [`Trainer::fit`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FitSummary {
    pub epochs: usize,
    pub iterations: usize,
    /// A listener returned `Flow::Stop`.
    pub stopped: bool,
    pub last_loss: Option<f64>,
    pub last_validation: Option<Metrics>,
}

/// Trains the parameters of a forward graph in place. The step and the
/// forward graph are prepared once ([`Prepared`]), when the trainer is
/// built: every step and every evaluation only runs.
pub struct Trainer {
    forward: Prepared,
    /// Shared with a running [`Trainer::fit`], which also needs `self`.
    step: Rc<Prepared>,
    loss: String,
    optimizer: Box<dyn Optimizer>,
    validation: Option<Validation>,
    steps_done: usize,
}

/// The first element of output `name` as f64.
fn scalar_output(out: &vigil_engine::exec::RunOutput, name: &str) -> Result<f64> {
    out.get(name)
        .and_then(|t| t.to_f64_vec().ok()?.first().copied())
        .ok_or_else(|| TrainError::MissingOutput(name.to_string()))
}

impl Trainer {
    /// Builds the step graph of `forward` minimizing output `loss`. The
    /// parameters are shared with `forward`: evaluating it sees the
    /// trained values.
    pub fn new(forward: &Graph, loss: &str, optimizer: impl Optimizer + 'static) -> Result<Trainer> {
        let step = build_step(forward, loss, &optimizer)?;
        Ok(Trainer {
            forward: Prepared::as_given(forward.clone())?,
            step: Rc::new(Prepared::as_given(step)?),
            loss: loss.to_string(),
            optimizer: Box::new(optimizer),
            validation: None,
            steps_done: 0,
        })
    }

    /// Evaluates on `validation` after every epoch.
    pub fn validate_on(&mut self, validation: Validation) -> &mut Self {
        self.validation = Some(validation);
        self
    }

    /// The training-step graph (forward, backward, in-place updates).
    pub fn step_graph(&self) -> &Graph {
        self.step.graph()
    }

    /// The training-step graph, prepared (for running it yourself with
    /// [`Trainer::step`]).
    pub fn prepared_step(&self) -> &Prepared {
        &self.step
    }

    pub fn optimizer(&self) -> &dyn Optimizer {
        self.optimizer.as_ref()
    }

    /// The feeds of the next training step: `batch` and the optimizer's
    /// per-step inputs (for running the step graph yourself).
    pub fn step_feeds(&self, batch: &Feeds) -> Result<Feeds> {
        let mut feeds = batch.clone();
        feeds.extend(self.optimizer.feeds(self.steps_done + 1)?);
        Ok(feeds)
    }

    /// One training step on `batch`, firing the op hooks and `pre_update`;
    /// returns the loss (before the update).
    pub fn step(
        &mut self,
        exec: &Executor,
        batch: &Feeds,
        at: At,
        listener: &mut dyn Listener,
    ) -> Result<f64> {
        let feeds = self.step_feeds(batch)?;
        // The executor fires `pre_update` before each parameter update.
        let out = exec.run_with(
            &feeds,
            listener,
            &RunOptions {
                at,
                ..RunOptions::default()
            },
        )?;
        self.steps_done += 1;
        scalar_output(&out, &self.loss)
    }

    /// Loss and accuracy of the forward graph on `v`.
    pub fn evaluate(&self, v: &Validation, at: At, listener: &mut dyn Listener) -> Result<Metrics> {
        let out = self.forward.run_with(
            &v.feeds,
            listener,
            &RunOptions {
                at,
                ..RunOptions::default()
            },
        )?;
        let loss = out
            .get(&self.loss)
            .and_then(|t| t.to_f64_vec().ok()?.first().copied());
        let logits = out
            .get(&v.logits)
            .ok_or_else(|| TrainError::MissingOutput(v.logits.clone()))?;
        let labels = v.feeds.get(&v.labels).ok_or_else(|| TrainError::BadFeed {
            name: v.labels.clone(),
            msg: "not fed".into(),
        })?;
        let labels = labels.to_array::<i64>().map_err(|e| TrainError::BadFeed {
            name: v.labels.clone(),
            msg: e.to_string(),
        })?;
        let shape = logits.shape().to_vec();
        let classes = shape.last().copied().unwrap_or(1).max(1);
        let scores = logits.to_f64_vec()?;
        let hits = scores
            .chunks(classes)
            .zip(labels.iter())
            .filter(|(row, &label)| {
                let best = row
                    .iter()
                    .enumerate()
                    .max_by(|a, b| a.1.total_cmp(b.1))
                    .map(|(i, _)| i as i64);
                best == Some(label)
            })
            .count();
        let n = labels.len().max(1);
        Ok(Metrics {
            loss,
            accuracy: Some(hits as f64 / n as f64),
        })
    }

    /// Trains for `epochs` over `batches`, firing operation_start/end,
    /// epoch_start/end, iteration_start/done (with the loss), the op hooks
    /// and `pre_update` of every step, and validation_done after each
    /// epoch's evaluation. A listener's `Flow::Stop` from `validation_done`
    /// or `epoch_end` ends training after that epoch.
    pub fn fit(
        &mut self,
        epochs: usize,
        batches: &[Feeds],
        listener: &mut dyn Listener,
    ) -> Result<FitSummary> {
        let step = Rc::clone(&self.step);
        let exec = step.executor();
        let base = At::new(Operation::Training);
        let active = listener.is_active(Operation::Training);
        if active {
            listener.operation_start(&base, step.graph());
        }
        // The pool's other workers poll from step to step instead of
        // falling asleep between them (see `KeepAwake`).
        let awake = vigil_engine::parallel::KeepAwake::start();
        let result = self.epochs(&exec, epochs, batches, listener, active);
        drop(awake);
        if active {
            listener.operation_end(&base, step.graph());
        }
        result
    }

    fn epochs(
        &mut self,
        exec: &Executor,
        epochs: usize,
        batches: &[Feeds],
        listener: &mut dyn Listener,
        active: bool,
    ) -> Result<FitSummary> {
        let mut summary = FitSummary::default();
        for epoch in 0..epochs {
            let at = At::new(Operation::Training)
                .epoch(epoch)
                .iteration(self.steps_done);
            if active {
                listener.epoch_start(&at);
            }
            for batch in batches {
                let at = at.iteration(self.steps_done);
                if active {
                    listener.iteration_start(&at);
                }
                let loss = self.step(exec, batch, at, listener)?;
                if active {
                    listener.iteration_done(&at, Some(loss));
                }
                summary.iterations += 1;
                summary.last_loss = Some(loss);
            }
            summary.epochs += 1;
            let at = at.iteration(self.steps_done);
            let mut flow = Flow::Continue;
            if let Some(v) = &self.validation {
                let vat = At {
                    operation: Operation::TrainingValidation,
                    ..at
                };
                let metrics = self.evaluate(v, vat, listener)?;
                summary.last_validation = Some(metrics);
                if listener.is_active(Operation::TrainingValidation)
                    && listener.validation_done(&vat, &metrics) == Flow::Stop
                {
                    flow = Flow::Stop;
                }
            }
            if active && listener.epoch_end(&at) == Flow::Stop {
                flow = Flow::Stop;
            }
            if flow == Flow::Stop {
                summary.stopped = true;
                break;
            }
        }
        Ok(summary)
    }
}
