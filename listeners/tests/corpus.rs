//! The broken-op corpus: each broken op is caught with exactly its intended
//! finding, each twin and each built-in sample graph gives none.

mod common;

use common::*;
use vigil_engine::exec::Executor;
use vigil_engine::{DType, IndexSpec};
use vigil_listeners::selftest::{cases, run_case};
use vigil_listeners::{broken, Kind, NonInplaceValidationListener, ViewMapValidationListener};

#[test]
fn every_broken_op_gives_exactly_one_finding_of_its_kind() {
    for case in cases().iter().filter(|c| c.name.starts_with("broken_")) {
        let r = run_case(case);
        assert_eq!(r.error, None, "{}", case.name);
        assert_eq!(
            r.found,
            vec![case.expected.clone().unwrap()],
            "{}: {:#?}",
            case.name,
            r.findings
        );
        assert!(r.pass);
        let f = &r.findings[0];
        assert_eq!(f.case.as_deref(), Some(case.name.as_str()));
        assert_eq!(f.op, case.name, "the finding names the broken op");
        assert_eq!(broken::intended(&f.op), Some(f.kind.clone()));
    }
}

#[test]
fn a_panicking_listener_is_reported_once_and_switched_off() {
    let case = cases()
        .into_iter()
        .find(|c| c.name == "panicking_listener")
        .unwrap();
    let r = run_case(&case);
    assert!(r.pass, "{r:#?}");
    assert_eq!(
        r.found,
        vec![Kind::LISTENER_PANIC],
        "one finding, though the listener sees every op"
    );
    assert!(
        r.findings[0].message.contains("a listener bug"),
        "{}",
        r.findings[0].message
    );
}

#[test]
fn every_twin_and_builtin_sample_gives_no_finding() {
    let quiet: Vec<_> = cases().into_iter().filter(|c| c.expected.is_none()).collect();
    assert!(quiet.len() >= 14);
    for case in &quiet {
        let r = run_case(case);
        assert!(
            r.pass && r.findings.is_empty() && r.error.is_none(),
            "{}: {r:#?}",
            case.name
        );
    }
}

#[test]
fn selftest_covers_every_listener_kind() {
    let results = vigil_listeners::run_selftest();
    assert!(results.iter().all(|r| r.pass));
    let listener_kinds = [
        Kind::DESTROYED_INPUT,
        Kind::OUT_OF_VIEW_WRITE,
        Kind::UNDECLARED_VIEW,
        Kind::ALIASED_OUTPUTS,
        Kind::UNDECLARED_ALIAS,
        Kind::NON_FINITE,
        Kind::DECLARED_DESTROY_UNUSED,
        Kind::DECLARED_VIEW_NOT_ALIASED,
        Kind::LISTENER_PANIC,
    ];
    for k in listener_kinds {
        assert!(
            results.iter().any(|r| r.expected.as_ref() == Some(&k)),
            "no case for {k}"
        );
    }
    let json = serde_json::to_value(&results).unwrap();
    assert_eq!(json[0]["case"], "broken_accumulate");
    assert_eq!(json[0]["found"][0], "destroyed_input");
}

/// The built-in samples really were checked (not vacuously quiet).
#[test]
fn builtin_samples_are_checked_op_by_op() {
    for case in cases().iter().filter(|c| c.name.starts_with("builtin_")) {
        let (graph, feeds) = (case.build)().unwrap();
        let mut set = standard_set();
        let findings = run_with(&graph, &feeds, &mut set);
        assert!(findings.is_empty(), "{}: {findings:#?}", case.name);
        let exempt = graph
            .nodes()
            .iter()
            .filter(|n| n.op.exempt_from_inplace_check())
            .count();
        let stats = set.get::<NonInplaceValidationListener>().unwrap().stats().clone();
        // Swept nodes are counted, not hashed (noninplace.rs, "Sweeps").
        assert_eq!(
            stats.ops_checked + stats.ops_swept,
            graph.nodes().len() - exempt,
            "{}",
            case.name
        );
        assert_eq!(stats.passed, stats.ops_checked);
        // A sample that is one sweep from end to end hashes nothing.
        assert!(stats.ops_checked == 0 || (stats.inputs_checked > 0 && stats.hashes_computed > 0));
        assert_eq!(
            set.get::<ViewMapValidationListener>().unwrap().ops_checked(),
            graph.nodes().len()
        );
    }
}

/// A destroyed strided input is seen through its own elements only, and
/// the diff (Copy mode) names the view's flat indices and buffer offsets.
#[test]
fn destroyed_column_view_is_reported_with_flat_indices_in_copy_mode() {
    let g = builder("column");
    let x = g.input("x", DType::F32, &[4, 4]);
    let b = g.input("b", DType::F32, &[4]);
    let col = x.view(&[IndexSpec::All, IndexSpec::Point(1)]).unwrap();
    let y = col.op("broken_accumulate", &[&b], Default::default()).unwrap();
    let graph = g.build(&[&y]).unwrap();
    let fd = feeds(&[("x", ramp(&[4, 4])), ("b", f32s(&[4], &[0.0, 0.0, 1.0, 0.0]))]);
    let mut l = NonInplaceValidationListener::new().mode(vigil_listeners::Remember::Copy);
    let found = run_with(&graph, &fd, &mut l);
    assert_eq!(kinds(&found), vec![Kind::DESTROYED_INPUT]);
    let view = &found[0].details["view"];
    assert_eq!(view["changed"], 1);
    assert_eq!(view["first"][0]["flat"], 2);
    assert_eq!(view["first"][0]["offset"], 9);
    assert_eq!(view["first"][0]["old"], 1.25);
    assert_eq!(view["first"][0]["new"], 2.25);
    assert_eq!(view["min_change"], 1.0);
    assert_eq!(found[0].details["outside_checked"], true);
}

#[test]
fn broken_ops_run_the_intended_numbers() {
    // The corpus ops compute what they claim, apart from their defect.
    let g = builder("numbers");
    let a = g.input("a", DType::F32, &[4]);
    let b = g.input("b", DType::F32, &[4]);
    let y = a.op("fixed_safe_div", &[&b], Default::default()).unwrap();
    let z = a.op("fixed_accumulate", &[&b], Default::default()).unwrap();
    let graph = g.build(&[&y, &z]).unwrap();
    let fd = feeds(&[
        ("a", f32s(&[4], &[1.0, 2.0, 3.0, 4.0])),
        ("b", f32s(&[4], &[2.0, 0.0, 1.0, 4.0])),
    ]);
    let out = Executor::new(&graph).unwrap().run(&fd).unwrap();
    assert_eq!(out.outputs[0].1.to_f64_vec().unwrap(), vec![0.5, 0.0, 3.0, 1.0]);
    assert_eq!(out.outputs[1].1.to_f64_vec().unwrap(), vec![3.0, 2.0, 4.0, 8.0]);
    assert_eq!(fd["a"].to_f64_vec().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
}
