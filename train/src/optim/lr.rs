//! A learning rate shared between an optimizer and the listeners that
//! schedule it, so a schedule is a listener rather than a trainer option.

use std::cell::Cell;
use std::rc::Rc;

/// A shared, settable learning rate (cloning shares it).
#[derive(Clone, Debug)]
pub struct LearningRate(Rc<Cell<f64>>);

impl LearningRate {
    pub fn new(lr: f64) -> LearningRate {
        LearningRate(Rc::new(Cell::new(lr)))
    }
    pub fn get(&self) -> f64 {
        self.0.get()
    }
    pub fn set(&self, lr: f64) {
        self.0.set(lr)
    }
}
