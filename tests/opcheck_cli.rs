//! `vigil opcheck`: ops alone on random samples under every DebugMode check.

mod common;

use common::vigil;

#[test]
fn opcheck_passes_correct_ops_and_names_the_kind_of_a_broken_one() {
    let o = vigil(&["opcheck", "exp", "add", "fixed_scratch", "--cases", "6"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("3 of 3 ops pass"), "{out}");

    let dir = tempfile::tempdir().unwrap();
    let o = vigil(&[
        "opcheck",
        "broken_scratch",
        "--cases",
        "6",
        "--seed",
        "3",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("scratch_write at op (broken_scratch)"), "{out}");
    let case = dir.path().join("broken_scratch");
    assert!(case.join("graph.json").is_file(), "{out}");
    // The written case is one `vigil debug` takes and still finds.
    let o = vigil(&["debug", case.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("scratch_write"));
}

#[test]
fn opcheck_of_an_unknown_op_says_so() {
    let o = vigil(&["opcheck", "no_such_op"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("no_such_op: not checked"), "{out}");
}
