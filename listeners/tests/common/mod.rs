//! Helpers shared by the integration tests.
#![allow(dead_code)]

use vigil_engine::exec::{Executor, RunOptions};
use vigil_engine::graph::{Graph, GraphBuilder};
use vigil_engine::Tensor;
use vigil_listeners::{
    broken, Finding, Kind, ListenerSet, NonInplaceValidationListener, NumericsListener, Validator,
    ViewMapValidationListener,
};

pub use vigil_engine::Feeds;

pub fn builder(name: &str) -> GraphBuilder {
    GraphBuilder::with_registry(name, broken::registry())
}

pub fn f32s(shape: &[usize], data: &[f32]) -> Tensor {
    Tensor::from_vec(shape, data.to_vec()).unwrap()
}

pub fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec(shape, (0..n).map(|i| i as f32 * 0.25 - 1.0).collect()).unwrap()
}

pub fn feeds(list: &[(&str, Tensor)]) -> Feeds {
    list.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

/// Runs `graph` under `l` and returns its findings.
pub fn run_with<V: Validator>(graph: &Graph, feeds: &Feeds, l: &mut V) -> Vec<Finding> {
    Executor::new(graph)
        .unwrap()
        .run_with(feeds, l, &RunOptions::default())
        .unwrap();
    l.take_findings()
}

/// The standard set: non-in-place, view-map and numerics listeners.
pub fn standard_set() -> ListenerSet {
    ListenerSet::new()
        .with(NonInplaceValidationListener::new())
        .with(ViewMapValidationListener::new())
        .with(NumericsListener::new())
}

pub fn kinds(f: &[Finding]) -> Vec<Kind> {
    f.iter().map(|f| f.kind.clone()).collect()
}
