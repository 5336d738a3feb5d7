//! The importer's op registry against docs/onnx.md: every op type the
//! table names is registered and every registered op type is in the table.

use std::collections::BTreeSet;

/// The op types in the first column of the "## Ops" table: the words that
/// start with a capital letter (ONNX's op types are CamelCase; the notes
/// beside them, "(inference)", "over an empty axis", are lower case).
fn documented() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/onnx.md"))
        .expect("docs/onnx.md");
    let table = doc
        .split("\n## Ops\n")
        .nth(1)
        .expect("docs/onnx.md has a '## Ops' section")
        .split("\n## ")
        .next()
        .unwrap_or_default();
    let mut names = BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with('|')).skip(2) {
        let first = row.split('|').nth(1).unwrap_or_default();
        names.extend(
            first
                .split(|ch: char| !ch.is_ascii_alphanumeric())
                .filter(|w| w.starts_with(|ch: char| ch.is_ascii_uppercase()))
                .map(str::to_string),
        );
    }
    names
}

#[test]
fn the_registry_and_the_docs_table_name_the_same_ops() {
    let registered: BTreeSet<String> = vigil_onnx::supported_ops()
        .into_iter()
        .map(|(op, _)| op.to_string())
        .collect();
    let documented = documented();
    let undocumented: Vec<_> = registered.difference(&documented).collect();
    let unregistered: Vec<_> = documented.difference(&registered).collect();
    assert!(
        undocumented.is_empty() && unregistered.is_empty(),
        "registered but not in docs/onnx.md: {undocumented:?}; in docs/onnx.md but not registered: {unregistered:?}"
    );
}

#[test]
fn each_op_type_is_registered_once_with_an_opset_the_importer_reads() {
    let ops = vigil_onnx::supported_ops();
    let names: BTreeSet<_> = ops.iter().map(|(op, _)| *op).collect();
    assert_eq!(names.len(), ops.len(), "an op type is registered twice");
    for (op, since) in ops {
        assert!(
            vigil_onnx::model::OPSETS.contains(&since),
            "{op}: since_opset {since} is outside {:?}",
            vigil_onnx::model::OPSETS
        );
    }
}
