//! `opcheck`: an op alone on random samples of inputs under every check.

use vigil_debugmode::{broken, opcheck, opcheck_with, Kind, OpcheckConfig};
use vigil_engine::ops::OpRegistry;

fn registry() -> OpRegistry {
    let mut r = vigil_listeners::broken::registry();
    broken::register(&mut r);
    r
}

fn cfg(cases: usize) -> OpcheckConfig {
    OpcheckConfig {
        cases,
        ..OpcheckConfig::default()
    }
}

#[test]
fn built_in_ops_pass_on_every_kind_of_sample() {
    let r = registry();
    for op in ["add", "mul", "exp", "neg", "relu", "sum", "transpose"] {
        let rep = opcheck_with(&r, op, &cfg(12)).unwrap();
        assert!(rep.passed(), "{op}: {:#?} on {:?}", rep.findings, rep.failing);
        assert!(rep.ran > 0, "{op}: every sample refused");
    }
}

#[test]
fn a_stride_ignoring_op_fails_and_its_twin_passes() {
    let r = registry();
    let bad = opcheck_with(&r, "broken_memory_order", &cfg(6)).unwrap();
    assert!(
        bad.findings.iter().any(|f| f.kind == Kind::LAYOUT_DEPENDENT),
        "{:#?} after {} samples",
        bad.findings,
        bad.ran
    );
    let s = bad.failing.unwrap();
    assert_eq!(s.shape.len(), 1, "1-D only, shrunk: {s:?}");
    assert!(s.shape[0] <= 2, "shrunk to a small dimension: {s:?}");
    let good = opcheck_with(&r, "fixed_memory_order", &cfg(6)).unwrap();
    assert!(good.passed(), "{:#?}", good.findings);
}

#[test]
fn a_failing_sample_is_written_as_a_case_directory() {
    let dir = std::env::temp_dir().join(format!("vigil-opcheck-{}", std::process::id()));
    let c = OpcheckConfig {
        out: Some(dir.clone()),
        ..cfg(6)
    };
    let rep = opcheck_with(&registry(), "broken_jitter", &c).unwrap();
    assert!(
        rep.findings.iter().any(|f| f.kind == Kind::NONDETERMINISTIC),
        "{:#?}",
        rep.findings
    );
    let case = rep.case_dir.unwrap();
    assert!(case.join("graph.json").is_file());
    assert!(case.join("inputs").join("x0.npy").is_file());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_op_the_registry_lacks_is_an_error() {
    assert!(opcheck(&registry(), "no_such_op").is_err());
}
