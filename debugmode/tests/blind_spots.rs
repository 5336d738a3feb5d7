//! Kernels that are wrong the same way in both lockstep runs: each is found
//! with its kind at its node by the check made for it, and its correct twin
//! stays clean under every check.

use std::collections::HashMap;
use std::sync::Arc;

use vigil_debugmode::{broken, Check, DebugConfig, DebugMode, Finding, Kind};
use vigil_engine::graph::{Graph, GraphBuilder, Sym};
use vigil_engine::ops::{Arity, InplaceVariant, Op, OpCtx, OpRegistry, TypeInfo};
use vigil_engine::{DType, IndexSpec, Tensor};

fn registry() -> OpRegistry {
    let mut r = vigil_listeners::broken::registry();
    broken::register(&mut r);
    r
}

use vigil_engine::Feeds;

fn f32s(shape: &[usize], v: Vec<f32>) -> Tensor {
    Tensor::from_vec(shape, v).unwrap()
}

fn op(x: &Sym, name: &str) -> Sym {
    x.op(name, &[], Default::default()).unwrap()
}

/// `neg(op(exp(x)))` on a 1-D f32 `x` of 12 elements; the op's node is
/// named "target".
fn chain(name: &str) -> (Graph, Feeds) {
    let b = GraphBuilder::with_registry("g", registry());
    let x = b.input("x", DType::F32, &[12]);
    let e = x.exp().unwrap();
    let y = b
        .apply_named("target", name, &[&e], Default::default())
        .unwrap()
        .remove(0);
    let g = b.build(&[&y.neg().unwrap()]).unwrap();
    let v = (0..12).map(|i| (i as f32 * 0.37).sin()).collect();
    (g, HashMap::from([("x".to_string(), f32s(&[12], v))]))
}

/// `op(row 1 of exp(x))` for a 3x4 `x`: the op's input is a view in the
/// middle of a larger buffer.
fn row_of_matrix(name: &str) -> (Graph, Feeds) {
    let b = GraphBuilder::with_registry("g", registry());
    let x = b.input("x", DType::F32, &[3, 4]);
    let row = x.exp().unwrap().view(&[IndexSpec::Point(1)]).unwrap();
    let y = b
        .apply_named("target", name, &[&row], Default::default())
        .unwrap()
        .remove(0);
    let g = b.build(&[&y]).unwrap();
    let v = (0..12).map(|i| i as f32 * 0.1).collect();
    (g, HashMap::from([("x".to_string(), f32s(&[3, 4], v))]))
}

fn check(g: &Graph, f: &Feeds, cfg: DebugConfig) -> Vec<Finding> {
    DebugMode::new(cfg).check(g, f).unwrap().findings
}

fn only(cfg: &str) -> DebugConfig {
    DebugConfig::default().with_checks(cfg).unwrap()
}

fn at_target(found: &[Finding], kind: Kind) -> &Finding {
    let f = found
        .iter()
        .find(|f| f.kind == kind)
        .unwrap_or_else(|| panic!("no {kind} in {found:#?}"));
    assert_eq!(f.node, "target", "{f:#?}");
    f
}

fn twin_clean(build: fn(&str) -> (Graph, Feeds), name: &str) {
    let (g, f) = build(name);
    let found = check(&g, &f, DebugConfig::all());
    assert!(found.is_empty(), "{name}: {found:#?}");
}

#[test]
fn a_nondeterministic_op_is_found_by_the_default_checks() {
    let (g, f) = chain("broken_jitter");
    let found = check(&g, &f, DebugConfig::default());
    let n = at_target(&found, Kind::NONDETERMINISTIC);
    assert!(n.message.contains("nondeterministic"), "{}", n.message);
    assert!(
        found.iter().all(|f| f.kind != Kind::VALUE_MISMATCH),
        "three answers from one op are not a value mismatch: {found:#?}"
    );
    twin_clean(chain, "fixed_jitter");
}

#[test]
fn an_op_that_reads_its_output_buffer_is_an_uninitialized_read_in_lockstep_and_prealloc() {
    let (g, f) = chain("broken_accumulate_out");
    at_target(&check(&g, &f, DebugConfig::default()), Kind::UNINITIALIZED_READ);
    let pre = check(&g, &f, only("prealloc"));
    at_target(&pre, Kind::UNINITIALIZED_READ);
    assert!(
        pre.iter().all(|f| f.kind != Kind::PREALLOCATED_OUTPUT),
        "{pre:#?}"
    );
}

#[test]
fn an_op_that_ignores_strides_is_layout_dependent_and_prealloc_agrees() {
    let (g, f) = chain("broken_memory_order");
    assert!(check(&g, &f, DebugConfig::default()).is_empty());
    let found = check(&g, &f, only("layouts"));
    let l = at_target(&found, Kind::LAYOUT_DEPENDENT);
    assert_eq!(l.input, Some(0));
    assert_eq!(l.details["layout"], "reversed", "{l:#?}");
    assert!(!l.details["first"].is_null());
    // Upstream pre-allocated buffers hand it reversed inputs: the same bug,
    // the same kind, never "depends on the output buffer".
    let pre = check(&g, &f, only("prealloc"));
    assert!(
        pre.iter().all(|f| f.kind != Kind::PREALLOCATED_OUTPUT),
        "{pre:#?}"
    );
    twin_clean(chain, "fixed_memory_order");
}

#[test]
fn an_op_that_reads_past_its_view_reads_outside_the_view() {
    for build in [chain, row_of_matrix] {
        let (g, f) = build("broken_past_view");
        let found = check(&g, &f, only("layouts"));
        let l = at_target(&found, Kind::LAYOUT_DEPENDENT);
        assert_eq!(l.details["reads_outside_view"], true, "{l:#?}");
        assert!(l.message.contains("reads outside input 0"), "{}", l.message);
        // Pre-allocated buffers upstream move the row inside its matrix;
        // that is the op's input, never its output buffer.
        let pre = check(&g, &f, only("prealloc"));
        assert!(
            pre.iter().all(|f| f.kind != Kind::PREALLOCATED_OUTPUT),
            "{pre:#?}"
        );
        twin_clean(build, "fixed_past_view");
    }
}

#[test]
fn a_pure_op_that_computes_in_its_input_and_restores_it_is_a_scratch_write() {
    let (g, f) = chain("broken_scratch");
    let found = check(&g, &f, DebugConfig::default());
    let s = at_target(&found, Kind::SCRATCH_WRITE);
    assert_eq!(s.input, Some(0));
    assert!(s.message.contains("destroy_map"), "{}", s.message);
    assert_eq!(found.len(), 1, "{found:#?}");
    twin_clean(chain, "fixed_scratch");
}

#[test]
fn partial_sums_chunked_by_thread_count_are_thread_dependent() {
    let build = |name: &str| {
        let b = GraphBuilder::with_registry("g", registry());
        let x = b.input("x", DType::F32, &[8]);
        let y = b
            .apply_named("target", name, &[&x], Default::default())
            .unwrap()
            .remove(0);
        let g = b.build(&[&y.neg().unwrap()]).unwrap();
        let v = vec![1e8f32, 1.0, 1.0, 1.0, -1e8, 1.0, 1.0, 1.0];
        (g, HashMap::from([("x".to_string(), f32s(&[8], v))]))
    };
    let (g, f) = build("broken_thread_sum");
    assert!(check(
        &g,
        &f,
        DebugConfig::all().with_checks("listeners,lockstep").unwrap()
    )
    .is_empty());
    let found = check(&g, &f, only("threads"));
    assert_eq!(found.len(), 1, "{found:#?}");
    at_target(&found, Kind::THREAD_DEPENDENT);
    let (g, f) = build("fixed_thread_sum");
    assert!(check(&g, &f, DebugConfig::all()).is_empty());
}

#[test]
fn a_panicking_op_is_a_finding_under_the_rust_api() {
    let b = GraphBuilder::with_registry("g", registry());
    let x = b.input("x", DType::F64, &[3]);
    let y = b
        .apply_named("target", "broken_f32_only", &[&x], Default::default())
        .unwrap()
        .remove(0);
    let g = b.build(&[&y.exp().unwrap()]).unwrap();
    let f = HashMap::from([(
        "x".to_string(),
        Tensor::from_vec(&[3], vec![1.0f64, 2.0, 3.0]).unwrap(),
    )]);
    for cfg in [DebugConfig::default(), DebugConfig::all()] {
        let found = check(&g, &f, cfg);
        at_target(&found, Kind::OP_PANIC);
    }
}

/// `x + 1` for any float; its in-place variant adds 1.01 (the bug).
struct Drift {
    inplace: bool,
}

impl Op for Drift {
    fn name(&self) -> &str {
        if self.inplace {
            "drift_inplace"
        } else {
            "drift"
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, i: &[TypeInfo]) -> vigil_engine::Result<Vec<TypeInfo>> {
        Ok(vec![i[0].clone()])
    }
    fn compute(&self, i: &[Tensor], ctx: &mut OpCtx) -> vigil_engine::Result<Vec<Tensor>> {
        let x = &i[0];
        let add = if self.inplace { 1.01 } else { 1.0 };
        let v: Vec<f64> = x.to_f64_vec()?.iter().map(|e| e + add).collect();
        let r = Tensor::from_vec(x.shape(), v)?.cast(x.dtype())?;
        let out = if self.inplace {
            x.clone()
        } else {
            ctx.output(0, x.dtype(), x.shape())?
        };
        out.assign(&r)?;
        Ok(vec![out])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        if self.inplace {
            vec![(0, 0)]
        } else {
            Vec::new()
        }
    }
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        if self.inplace {
            return Vec::new();
        }
        vec![InplaceVariant {
            op: Arc::new(Drift { inplace: true }),
            inputs: vec![0],
        }]
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace
            .then(|| Arc::new(Drift { inplace: false }) as Arc<dyn Op>)
    }
}

#[test]
fn an_op_panicking_in_f64_arbitration_loses_no_finding() {
    // An f32 divergence of an in-place variant (for arbitration to judge)
    // and an f32-only kernel downstream that panics when arbitration runs
    // the graph in f64.
    let mut r = registry();
    r.register_op(Arc::new(Drift { inplace: false }));
    r.register_op(Arc::new(Drift { inplace: true }));
    let b = GraphBuilder::with_registry("g", r);
    let x = b.input("x", DType::F32, &[6]);
    let a = x.exp().unwrap();
    let s = b
        .apply_named("target", "drift", &[&a], Default::default())
        .unwrap()
        .remove(0);
    let y = op(&s, "broken_f32_only");
    let g = b.build(&[&y]).unwrap();
    let f = HashMap::from([("x".to_string(), f32s(&[6], vec![0.1, 0.2, 0.3, 0.4, 0.5, 0.6]))]);
    for cfg in [DebugConfig::default(), DebugConfig::all()] {
        let found = check(&g, &f, cfg);
        let v = at_target(&found, Kind::VALUE_MISMATCH);
        let why = v.details["arbitration"]["not_arbitrated"]
            .as_str()
            .unwrap_or_default();
        assert!(
            why.contains("panicked") && why.contains("broken_f32_only"),
            "{v:#?}"
        );
        assert!(v.message.contains("not arbitrated"), "{}", v.message);
    }
}

#[test]
fn every_check_has_a_name_all_switches_on() {
    let all = DebugConfig::default().with_checks("all").unwrap();
    assert!(all.has(Check::Layouts) && all.has(Check::Threads));
    assert!(!DebugConfig::default().has(Check::Layouts));
    assert!(!DebugConfig::default().has(Check::Threads));
}

/// Row sums over the last axis, in order; `broken_plan_sum` sums in
/// reverse from its second call on (as if it kept a plan made on the
/// first), so its bits depend on the calls before.
struct PlanSum {
    name: &'static str,
    calls: std::sync::atomic::AtomicUsize,
}

impl Op for PlanSum {
    fn name(&self) -> &str {
        self.name
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> vigil_engine::Result<Vec<TypeInfo>> {
        let mut t = inputs[0].clone();
        if let Some(s) = &mut t.shape {
            s.pop();
        }
        Ok(vec![t])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> vigil_engine::Result<Vec<Tensor>> {
        let x = &inputs[0];
        let out = ctx.output(0, DType::F32, &x.shape()[..x.ndim() - 1])?;
        let call = self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let reverse = self.name == "broken_plan_sum" && call > 0;
        let rows = x.to_array::<f32>()?;
        let sums: Vec<f32> = rows
            .rows()
            .into_iter()
            .map(|r| match reverse {
                true => r.iter().rev().sum(),
                false => r.iter().sum(),
            })
            .collect();
        out.assign(&Tensor::from_vec(out.shape(), sums)?)?;
        Ok(vec![out])
    }
}

#[test]
fn an_op_whose_bits_depend_on_its_earlier_calls_is_a_nondeterministic_warning() {
    let build = |name: &'static str| {
        let mut r = registry();
        r.register_op(Arc::new(PlanSum {
            name,
            calls: Default::default(),
        }));
        let b = GraphBuilder::with_registry("g", r);
        let x = b.input("x", DType::F32, &[4, 64]);
        let y = b
            .apply_named("target", name, &[&x.exp().unwrap()], Default::default())
            .unwrap()
            .remove(0);
        let g = b.build(&[&y.neg().unwrap()]).unwrap();
        let v = (0..256).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        (g, HashMap::from([("x".to_string(), f32s(&[4, 64], v))]))
    };
    let (g, f) = build("broken_plan_sum");
    let found = check(&g, &f, DebugConfig::default());
    assert_eq!(found.len(), 1, "{found:#?}");
    let n = at_target(&found, Kind::NONDETERMINISTIC);
    assert_eq!(n.severity, vigil_findings::Severity::Warning, "{n:#?}");
    assert_eq!(n.output, Some(0));
    let (g, f) = build("fixed_plan_sum");
    let found = check(&g, &f, DebugConfig::all());
    assert!(found.is_empty(), "{found:#?}");
}
