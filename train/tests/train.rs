//! Optimizers update parameters in place and fire pre_update; the Trainer
//! fires the training hooks in order and honours Stop; schedules and early
//! stopping are listeners.

use std::collections::HashMap;

use vigil_engine::exec::{At, Flow, Listener, Metrics};
use vigil_engine::graph::VarKind;
use vigil_engine::{Attrs, DType, Graph, GraphBuilder, Tensor};
use vigil_train::{Adam, EarlyStopping, Feeds, Optimizer, Sgd, StepDecay, Trainer, Validation};

/// `loss = mean((x·w + b − y)²)` with w [2], b [1].
fn regression() -> (Graph, Feeds) {
    let g = GraphBuilder::new("reg");
    let x = g.input("x", DType::F64, &[-1, 2]);
    let y = g.input("y", DType::F64, &[-1]);
    let w = g.parameter("w", Tensor::from_vec(&[2], vec![0.5f64, -0.25]).unwrap());
    let b = g.parameter("b", Tensor::from_vec(&[1], vec![0.0f64]).unwrap());
    let loss = x.matmul(&w).unwrap().add(&b).unwrap().mse(&y).unwrap();
    let graph = g.build(&[&loss]).unwrap();
    let feeds = HashMap::from([
        (
            "x".to_string(),
            Tensor::from_vec(&[3, 2], vec![1.0f64, 2.0, -1.0, 0.5, 0.0, 1.0]).unwrap(),
        ),
        (
            "y".to_string(),
            Tensor::from_vec(&[3], vec![1.0f64, -2.0, 0.5]).unwrap(),
        ),
    ]);
    (graph, feeds)
}

fn param(g: &Graph, name: &str) -> Vec<f64> {
    match &g.var(g.var_id(name).unwrap()).kind {
        VarKind::Parameter(t) => t.to_f64_vec().unwrap(),
        _ => panic!("{name} is not a parameter"),
    }
}

/// The analytic gradient of the regression loss at the current parameters.
fn reg_grad(g: &Graph, feeds: &Feeds) -> (Vec<f64>, f64) {
    let (w, b) = (param(g, "w"), param(g, "b")[0]);
    let x = feeds["x"].to_f64_vec().unwrap();
    let y = feeds["y"].to_f64_vec().unwrap();
    let mut gw = vec![0.0; 2];
    let mut gb = 0.0;
    for i in 0..3 {
        let r = x[2 * i] * w[0] + x[2 * i + 1] * w[1] + b - y[i];
        gw[0] += 2.0 * r * x[2 * i] / 3.0;
        gw[1] += 2.0 * r * x[2 * i + 1] / 3.0;
        gb += 2.0 * r / 3.0;
    }
    (gw, gb)
}

/// Records hook names and pre_update arguments.
#[derive(Default)]
struct Recorder {
    events: Vec<String>,
    updates: Vec<(String, Vec<f64>, Vec<f64>)>,
    stop_at_epoch: Option<usize>,
}

impl Listener for Recorder {
    fn operation_start(&mut self, at: &At, g: &Graph) {
        self.events
            .push(format!("operation_start {:?} {}", at.operation, g.name()));
    }
    fn operation_end(&mut self, at: &At, _: &Graph) {
        self.events.push(format!("operation_end {:?}", at.operation));
    }
    fn epoch_start(&mut self, at: &At) {
        self.events.push(format!("epoch_start {}", at.epoch));
    }
    fn epoch_end(&mut self, at: &At) -> Flow {
        self.events.push(format!("epoch_end {}", at.epoch));
        match self.stop_at_epoch {
            Some(e) if e == at.epoch => Flow::Stop,
            _ => Flow::Continue,
        }
    }
    fn iteration_start(&mut self, at: &At) {
        self.events.push(format!("iteration_start {}", at.iteration));
    }
    fn iteration_done(&mut self, at: &At, loss: Option<f64>) {
        self.events
            .push(format!("iteration_done {} {}", at.iteration, loss.is_some()));
    }
    fn validation_done(&mut self, at: &At, m: &Metrics) -> Flow {
        self.events
            .push(format!("validation_done {} {}", at.epoch, m.accuracy.is_some()));
        Flow::Continue
    }
    fn pre_update(&mut self, _: &At, param: &str, old: &Tensor, new: &Tensor) {
        self.updates.push((
            param.to_string(),
            old.to_f64_vec().unwrap(),
            new.to_f64_vec().unwrap(),
        ));
    }
}

#[test]
fn sgd_updates_the_shared_parameters_in_place_and_fires_pre_update() {
    let (g, feeds) = regression();
    let (gw, gb) = reg_grad(&g, &feeds);
    let (w0, b0) = (param(&g, "w"), param(&g, "b"));
    let mut t = Trainer::new(&g, &loss_name(&g), Sgd::new(0.1)).unwrap();
    // The updates are in-place ops on the parameters.
    let step = t.step_graph();
    let destroys: Vec<&str> = step
        .nodes()
        .iter()
        .filter(|n| {
            n.op.destroy_map()
                .iter()
                .any(|&(_, i)| matches!(step.var(n.inputs[i]).kind, VarKind::Parameter(_)))
        })
        .map(|n| n.op.name())
        .collect();
    assert_eq!(destroys, vec!["sub_inplace", "sub_inplace"]);
    let mut rec = Recorder::default();
    t.fit(1, std::slice::from_ref(&feeds), &mut rec).unwrap();
    let want_w: Vec<f64> = w0.iter().zip(&gw).map(|(w, g)| w - 0.1 * g).collect();
    let got_w = param(&g, "w");
    for (a, b) in got_w.iter().zip(&want_w) {
        assert!((a - b).abs() < 1e-12, "{got_w:?} vs {want_w:?}");
    }
    assert!((param(&g, "b")[0] - (b0[0] - 0.1 * gb)).abs() < 1e-12);
    let mut names: Vec<&str> = rec.updates.iter().map(|u| u.0.as_str()).collect();
    names.sort();
    assert_eq!(names, vec!["b", "w"]);
    let w_update = rec.updates.iter().find(|u| u.0 == "w").unwrap();
    assert_eq!(w_update.1, w0);
    assert_eq!(w_update.2, got_w);
}

fn loss_name(g: &Graph) -> String {
    g.var(g.outputs()[0]).name.clone()
}

#[test]
fn momentum_and_adam_fire_pre_update_for_state_too_and_reduce_the_loss() {
    let cases: Vec<(MakeOpt, usize)> = vec![
        // One pre_update per in-place op: velocity (scale, add) and w.
        (Box::new(|| Box::new(Sgd::new(0.05).with_momentum(0.9))), 3),
        // m (2), v (2), w (1); AdamW adds the decay of w.
        (Box::new(|| Box::new(Adam::new(0.05))), 5),
        (Box::new(|| Box::new(Adam::new(0.05).weight_decay(0.01))), 6),
    ];
    for (make, per_param) in cases {
        let (g, feeds) = regression();
        let loss = loss_name(&g);
        let mut t = Trainer::new(&g, &loss, BoxedOpt(make())).unwrap();
        let mut rec = Recorder::default();
        let first = t
            .fit(1, std::slice::from_ref(&feeds), &mut rec)
            .unwrap()
            .last_loss
            .unwrap();
        assert_eq!(
            rec.updates.len(),
            2 * per_param,
            "{:?}",
            rec.updates.iter().map(|u| &u.0).collect::<Vec<_>>()
        );
        let last = t
            .fit(
                60,
                std::slice::from_ref(&feeds),
                &mut vigil_engine::exec::NoListener,
            )
            .unwrap()
            .last_loss
            .unwrap();
        assert!(last < first * 0.5, "loss {first} -> {last}");
    }
}

/// Makes a fresh optimizer.
type MakeOpt = Box<dyn Fn() -> Box<dyn Optimizer>>;

/// An optimizer behind a box (to test several in one loop).
struct BoxedOpt(Box<dyn Optimizer>);
impl Optimizer for BoxedOpt {
    fn build(
        &self,
        b: &GraphBuilder,
        p: &[(vigil_engine::Sym, vigil_engine::Sym)],
    ) -> vigil_train::Result<Vec<vigil_engine::Sym>> {
        self.0.build(b, p)
    }
    fn feeds(&self, t: usize) -> vigil_train::Result<Feeds> {
        self.0.feeds(t)
    }
    fn learning_rate(&self) -> vigil_train::LearningRate {
        self.0.learning_rate()
    }
}

/// Two-class logistic model on separable points.
fn classifier() -> (Graph, Feeds) {
    let g = GraphBuilder::new("clf");
    let x = g.input("x", DType::F32, &[-1, 2]);
    let labels = g.input("labels", DType::I64, &[-1]);
    let w = g.parameter(
        "w",
        Tensor::from_vec(&[2, 2], vec![0.1f32, -0.1, 0.05, 0.0]).unwrap(),
    );
    let logits = x.matmul(&w).unwrap();
    let loss = logits.op("cross_entropy", &[&labels], Attrs::new()).unwrap();
    let graph = g.build(&[&loss, &logits]).unwrap();
    let feeds = HashMap::from([
        (
            "x".to_string(),
            Tensor::from_vec(&[4, 2], vec![1.0f32, 0.0, 0.9, 0.2, 0.0, 1.0, 0.1, 0.8]).unwrap(),
        ),
        (
            "labels".to_string(),
            Tensor::from_vec(&[4], vec![0i64, 0, 1, 1]).unwrap(),
        ),
    ]);
    (graph, feeds)
}

#[test]
fn fit_fires_the_hooks_in_order_and_honours_stop() {
    let (g, feeds) = classifier();
    let loss = loss_name(&g);
    let logits = g.var(g.outputs()[1]).name.clone();
    let mut t = Trainer::new(&g, &loss, Sgd::new(0.5)).unwrap();
    t.validate_on(Validation {
        feeds: feeds.clone(),
        logits,
        labels: "labels".into(),
    });
    let mut rec = Recorder {
        stop_at_epoch: Some(1),
        ..Recorder::default()
    };
    let s = t.fit(5, &[feeds.clone(), feeds.clone()], &mut rec).unwrap();
    assert!(s.stopped);
    assert_eq!(s.epochs, 2);
    let training: Vec<&str> = rec
        .events
        .iter()
        .map(String::as_str)
        .filter(|e| {
            !e.starts_with("operation_")
                || e.contains("clf") && e.contains("Training ")
                || *e == "operation_end Training"
        })
        .collect();
    assert_eq!(training.first(), Some(&"operation_start Training clf"));
    assert_eq!(training.last(), Some(&"operation_end Training"));
    let hooks: Vec<&str> = rec
        .events
        .iter()
        .map(String::as_str)
        .filter(|e| !e.starts_with("operation_"))
        .collect();
    assert_eq!(
        hooks,
        vec![
            "epoch_start 0",
            "iteration_start 0",
            "iteration_done 0 true",
            "iteration_start 1",
            "iteration_done 1 true",
            "validation_done 0 true",
            "epoch_end 0",
            "epoch_start 1",
            "iteration_start 2",
            "iteration_done 2 true",
            "iteration_start 3",
            "iteration_done 3 true",
            "validation_done 1 true",
            "epoch_end 1",
        ]
    );
    let acc = s.last_validation.unwrap().accuracy.unwrap();
    assert_eq!(acc, 1.0);
}

#[test]
fn early_stopping_and_step_decay_are_listeners() {
    let mut es = EarlyStopping::new(2, 0.0);
    let at = At::default();
    let m = |l| Metrics {
        loss: Some(l),
        accuracy: None,
    };
    assert_eq!(es.validation_done(&at, &m(1.0)), Flow::Continue);
    assert_eq!(es.validation_done(&at, &m(0.5)), Flow::Continue);
    assert_eq!(es.validation_done(&at, &m(0.6)), Flow::Continue);
    assert_eq!(es.validation_done(&at, &m(0.7)), Flow::Stop);
    assert_eq!(es.best(), Some(0.5));

    let sgd = Sgd::new(0.4);
    let lr = sgd.learning_rate();
    let mut decay = StepDecay::new(lr.clone(), 2, 0.5);
    decay.epoch_start(&At::default().epoch(3));
    assert_eq!(lr.get(), 0.2);
    assert_eq!(
        sgd.feeds(1).unwrap()["optim:lr"].to_f64_vec().unwrap(),
        vec![0.2f32 as f64]
    );
}
