//! ScoreListener logs the loss every N iterations; HistoryListener keeps
//! the whole history and writes it as JSON or CSV.

use serde::Serialize;
use vigil_engine::exec::{At, Flow, Listener, Metrics};

/// Logs the loss (through `tracing`, target `vigil::score`) every `every`
/// iterations, and keeps the last logged value.
pub struct ScoreListener {
    every: usize,
    last: Option<(usize, f64)>,
}

impl ScoreListener {
    pub fn new(every: usize) -> ScoreListener {
        ScoreListener {
            every: every.max(1),
            last: None,
        }
    }

    /// The last logged (iteration, loss).
    pub fn last(&self) -> Option<(usize, f64)> {
        self.last
    }
}

impl Listener for ScoreListener {
    fn iteration_done(&mut self, at: &At, loss: Option<f64>) {
        if let Some(loss) = loss {
            if at.iteration.is_multiple_of(self.every) {
                tracing::info!(target: "vigil::score", epoch = at.epoch, iteration = at.iteration, loss, "score");
                self.last = Some((at.iteration, loss));
            }
        }
    }
}

/// One row of the history.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Record {
    pub epoch: usize,
    pub iteration: usize,
    /// `iteration`, `epoch` or `validation`.
    pub event: &'static str,
    pub loss: Option<f64>,
    /// Validation accuracy, on `validation` rows.
    pub accuracy: Option<f64>,
}

/// Keeps every iteration's loss and every epoch and validation boundary.
#[derive(Default)]
pub struct HistoryListener {
    records: Vec<Record>,
}

impl HistoryListener {
    pub fn new() -> HistoryListener {
        HistoryListener::default()
    }

    pub fn records(&self) -> &[Record] {
        &self.records
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.records).unwrap_or_else(|_| "[]".into())
    }

    pub fn to_csv(&self) -> String {
        let mut s = String::from("epoch,iteration,event,loss,accuracy\n");
        for r in &self.records {
            let loss = r.loss.map(|l| l.to_string()).unwrap_or_default();
            let acc = r.accuracy.map(|l| l.to_string()).unwrap_or_default();
            s.push_str(&format!("{},{},{},{loss},{acc}\n", r.epoch, r.iteration, r.event));
        }
        s
    }
}

impl Listener for HistoryListener {
    fn iteration_done(&mut self, at: &At, loss: Option<f64>) {
        self.records.push(Record {
            epoch: at.epoch,
            iteration: at.iteration,
            event: "iteration",
            loss,
            accuracy: None,
        });
    }

    fn epoch_end(&mut self, at: &At) -> Flow {
        self.records.push(Record {
            epoch: at.epoch,
            iteration: at.iteration,
            event: "epoch",
            loss: None,
            accuracy: None,
        });
        Flow::Continue
    }

    fn validation_done(&mut self, at: &At, metrics: &Metrics) -> Flow {
        self.records.push(Record {
            epoch: at.epoch,
            iteration: at.iteration,
            event: "validation",
            loss: metrics.loss,
            accuracy: metrics.accuracy,
        });
        Flow::Continue
    }
}
