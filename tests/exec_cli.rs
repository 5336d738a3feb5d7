//! End-to-end tests of `vigil exec`: the views suite against its expected
//! outputs and layouts, the one-line error contract, and input overrides.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use vigil::engine::{Element, Tensor};

// ----- helpers ----------------------------------------------------------------

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/views")
}

fn vigil<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .env_remove("RUST_LOG")
        .output()
        .expect("run vigil")
}

/// `vigil exec <graph> <extra...> --out <out>`.
fn exec(graph: &Path, extra: &[&OsStr], out: &Path) -> Output {
    let mut args: Vec<&OsStr> = vec![OsStr::new("exec"), graph.as_os_str()];
    args.extend_from_slice(extra);
    args.extend([OsStr::new("--out"), out.as_os_str()]);
    vigil(args)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write_npy<T: Element>(path: &Path, shape: &[usize], data: Vec<T>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    Tensor::from_vec(shape, data).unwrap().write_npy(path).unwrap();
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn elems_equal<T: Element>(a: &Tensor, b: &Tensor) -> bool {
    let (a, b) = (a.to_array::<T>().unwrap(), b.to_array::<T>().unwrap());
    // `x != x` only for NaN: NaN matches NaN.
    #[allow(clippy::eq_op)]
    a.iter().zip(b.iter()).all(|(x, y)| x == y || (x != x && y != y))
}

/// Same dtype, shape and values (NaN equal to NaN).
fn compare(got: &Tensor, want: &Tensor) -> Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!(
            "got {} {:?}, expected {} {:?}",
            got.dtype(),
            got.shape(),
            want.dtype(),
            want.shape()
        ));
    }
    let same = vigil::engine::dispatch_all!(got.dtype(), T => elems_equal::<T>(got, want));
    if same {
        Ok(())
    } else {
        Err(format!(
            "values differ: got {:?}, expected {:?}",
            got.to_f64_vec().unwrap(),
            want.to_f64_vec().unwrap()
        ))
    }
}

/// For each graph output made by a view op (create_view, transpose), the graph
/// input whose buffer it shares; other outputs map to `None`.
fn view_roots(graph: &Value) -> Vec<(String, Option<String>)> {
    let nodes = graph["nodes"].as_array().unwrap();
    let producer = |var: &str| {
        nodes
            .iter()
            .find(|n| n["outputs"].as_array().unwrap().iter().any(|o| o == var))
    };
    let root = |var: &str| -> Option<String> {
        let mut v = var.to_string();
        loop {
            match producer(&v) {
                None => return Some(v),
                Some(n) if matches!(n["op"].as_str(), Some("create_view" | "transpose")) => {
                    v = n["inputs"][0].as_str().unwrap().to_string();
                }
                Some(_) => return None,
            }
        }
    };
    graph["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let o = o.as_str().unwrap();
            (o.to_string(), root(o))
        })
        .collect()
}

/// Runs one suite case; returns the problems found.
fn check_case(case: &Path, out: &Path) -> Vec<String> {
    let name = case.file_name().unwrap().to_string_lossy().into_owned();
    let o = exec(case, &[], out);
    if !o.status.success() {
        return vec![format!(
            "{name}: exit {:?}: {}",
            o.status.code(),
            stderr(&o).trim()
        )];
    }
    let mut problems = Vec::new();
    let graph = read_json(&case.join("graph.json"));
    let manifest = read_json(&out.join("manifest.json"));
    let roots = view_roots(&graph);
    let mut want_files: Vec<String> = roots.iter().map(|(o, _)| format!("{o}.npy")).collect();
    want_files.push("manifest.json".into());
    want_files.sort();
    let mut files: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    if files != want_files {
        problems.push(format!("{name}: output files {files:?}, expected {want_files:?}"));
    }
    for (output, root) in &roots {
        let got = Tensor::read_npy(out.join(format!("{output}.npy")));
        let want = Tensor::read_npy(case.join("expected").join(format!("{output}.npy")));
        let (got, want) = match (got, want) {
            (Ok(g), Ok(w)) => (g, w),
            (g, w) => {
                problems.push(format!(
                    "{name}/{output}: cannot read: {:?} {:?}",
                    g.err(),
                    w.err()
                ));
                continue;
            }
        };
        if let Err(e) = compare(&got, &want) {
            problems.push(format!("{name}/{output}: {e}"));
        }
        let m = &manifest["outputs"][output];
        if m["dtype"] != want.dtype().name() {
            problems.push(format!("{name}/{output}: manifest dtype {}", m["dtype"]));
        }
        let shape: Vec<usize> = serde_json::from_value(m["shape"].clone()).unwrap_or_default();
        if shape != want.shape() {
            problems.push(format!(
                "{name}/{output}: manifest shape {shape:?}, expected {:?}",
                want.shape()
            ));
        }
        let view_of = m["view_of"].as_str().map(str::to_string);
        if &view_of != root {
            problems.push(format!("{name}/{output}: view_of {view_of:?}, expected {root:?}"));
        }
    }
    problems
}

fn case_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(suite())
        .expect("suites/views exists (cargo run --example gen_views_suite -- suites/views)")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("graph.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

// ----- (a) the views suite ------------------------------------------------------

#[test]
fn every_views_case_matches_expected() {
    let dirs = case_dirs();
    assert!(dirs.len() >= 30, "only {} cases in suites/views", dirs.len());
    let tmp = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    for d in &dirs {
        let out = tmp.path().join(d.file_name().unwrap());
        problems.extend(check_case(d, &out));
    }
    assert!(
        problems.is_empty(),
        "{} of {} cases fail:\n{}",
        problems.len(),
        dirs.len(),
        problems.join("\n")
    );
}

/// case, output, shape, strides (elements), offset (elements).
type LayoutRow = (
    &'static str,
    &'static str,
    &'static [usize],
    &'static [isize],
    usize,
);

/// Manifest layouts, as numpy reports them (strides and data-pointer offset
/// divided by the item size).
#[test]
fn manifest_layout_matches_numpy() {
    #[rustfmt::skip]
    let table: &[LayoutRow] = &[
        // case, output, shape, strides, offset
        ("interval_negative_stride", "y", &[10], &[-1], 9),
        ("rank4_mixed", "y", &[3, 1, 3], &[-20, 0, 5], 109),
        ("new_axis_mixed", "y", &[1, 1, 2, 1], &[0, 0, 2, 0], 4),
        ("empty_interval_rank2", "y", &[3, 0], &[5, 1], 0),
        ("view_of_transpose", "y", &[3], &[1], 9),
        ("view_of_view", "z", &[5], &[-4], 22),
        ("rank0_new_axes", "y", &[1, 1], &[0, 0], 0),
        ("fed_index_negative", "y", &[5], &[-1], 19),
        ("interval_negative_stride_even_span", "y", &[2], &[-2], 5),
        ("interval_reverse_step2_even_length", "y", &[4], &[-2], 7),
        ("view_of_transpose_perm", "y", &[2, 1, 3], &[-2, 0, 4], 15),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    for &(case, output, shape, strides, offset) in table {
        let out = tmp.path().join(case);
        let o = exec(&suite().join(case), &[], &out);
        if !o.status.success() {
            problems.push(format!(
                "{case}: exit {:?}: {}",
                o.status.code(),
                stderr(&o).trim()
            ));
            continue;
        }
        let m = &read_json(&out.join("manifest.json"))["outputs"][output];
        let got = (
            serde_json::from_value::<Vec<usize>>(m["shape"].clone()).unwrap(),
            serde_json::from_value::<Vec<isize>>(m["strides"].clone()).unwrap(),
            m["offset"].as_u64().unwrap() as usize,
        );
        if got != (shape.to_vec(), strides.to_vec(), offset) {
            problems.push(format!(
                "{case}/{output}: vigil (shape, strides, offset) = {got:?}, numpy {:?}",
                (shape, strides, offset)
            ));
        }
        if m["view_of"] != "x" {
            problems.push(format!("{case}/{output}: view_of {}", m["view_of"]));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Negative strides with an even span, and bounds/strides near i64::MAX.
/// numpy: x[5:1:-2] == [5, 3]; x[::-2] on 8 elements == [7, 5, 3, 1].
#[test]
fn interval_length_edge_cases_match_numpy() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        "interval_negative_stride_even_span",
        "interval_reverse_step2_even_length",
        "view_of_transpose_perm",
        "interval_inclusive_end_i64_max",
        "interval_stride_i64_max",
    ];
    let problems: Vec<String> = cases
        .iter()
        .flat_map(|c| check_case(&suite().join(c), &tmp.path().join(c)))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ----- (b) errors ---------------------------------------------------------------

/// Asserts the error contract: exit code 2, exactly one line on stderr that
/// contains every `needle`, no panic or backtrace, and nothing left in `out`.
fn assert_error(o: &Output, out: &Path, needles: &[&str]) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "stderr must be one line, got:\n{err}");
    assert!(err.ends_with('\n'), "stderr: {err:?}");
    for bad in ["panicked", "backtrace", "internal error", "RUST_BACKTRACE"] {
        assert!(!err.contains(bad), "stderr mentions {bad}: {err}");
    }
    for n in needles {
        assert!(err.contains(n), "stderr does not mention {n:?}: {err}");
    }
    assert!(
        o.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(!out.exists(), "{} was left behind", out.display());
    err
}

/// A case with `x: f32 [4, 3]`, an index input `idx: i64 [-1]` and
/// `y = create_view(x, idx)` in node `pick`.
const VIEW_GRAPH: &str = r#"{"format": "vigil-graph/1", "name": "err",
  "inputs": [{"name": "x", "dtype": "f32", "shape": [4, 3]}, {"name": "idx", "dtype": "i64", "shape": [-1]}],
  "nodes": [{"name": "pick", "op": "create_view", "inputs": ["x", "idx"], "outputs": ["y"]}],
  "outputs": ["y"]}"#;

/// VIEW_GRAPH with the graph-level `outputs` replaced by `outputs` (JSON
/// text after `"outputs": `, up to the closing brace).
fn with_graph_outputs(outputs: &str) -> String {
    let last = "\n  \"outputs\": [\"y\"]}";
    assert!(VIEW_GRAPH.ends_with(last));
    format!(
        "{}\n  \"outputs\": {outputs}}}",
        &VIEW_GRAPH[..VIEW_GRAPH.len() - last.len()]
    )
}

fn x_data() -> Vec<f32> {
    (0..12).map(|i| i as f32).collect()
}

/// Writes a case directory: graph.json plus inputs/x.npy and inputs/idx.npy.
fn make_case(root: &Path, graph: &str, idx: &[i64]) -> PathBuf {
    let dir = root.join("case");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("graph.json"), graph).unwrap();
    write_npy(&dir.join("inputs/x.npy"), &[4, 3], x_data());
    write_npy(&dir.join("inputs/idx.npy"), &[idx.len()], idx.to_vec());
    dir
}

#[test]
fn error_malformed_json() {
    let tmp = tempfile::tempdir().unwrap();
    let case = make_case(
        tmp.path(),
        r#"{"format": "vigil-graph/1", "nodes": ["#,
        &[2, 0, 1, 1],
    );
    let out = tmp.path().join("out");
    assert_error(&exec(&case, &[], &out), &out, &["graph.json"]);
}

#[test]
fn error_unknown_field_and_format() {
    let tmp = tempfile::tempdir().unwrap();
    let case = make_case(
        tmp.path(),
        &with_graph_outputs("[\"y\"], \"extra\": 1"),
        &[2, 0, 1, 1],
    );
    let out = tmp.path().join("out");
    assert_error(&exec(&case, &[], &out), &out, &["graph.json", "extra"]);

    std::fs::write(
        case.join("graph.json"),
        VIEW_GRAPH.replace("vigil-graph/1", "vigil-graph/9"),
    )
    .unwrap();
    assert_error(&exec(&case, &[], &out), &out, &["graph.json", "vigil-graph/9"]);
}

#[test]
fn error_unknown_op_names_the_node() {
    let tmp = tempfile::tempdir().unwrap();
    let case = make_case(
        tmp.path(),
        &VIEW_GRAPH.replace("\"create_view\"", "\"frobnicate\""),
        &[2, 0, 1, 1],
    );
    let out = tmp.path().join("out");
    assert_error(
        &exec(&case, &[], &out),
        &out,
        &["graph.json", "'pick'", "frobnicate"],
    );
}

#[test]
fn error_unknown_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let case = make_case(
        tmp.path(),
        &VIEW_GRAPH.replace("[\"x\", \"idx\"]", "[\"x\", \"nope\"]"),
        &[2, 0, 1, 1],
    );
    let out = tmp.path().join("out");
    assert_error(&exec(&case, &[], &out), &out, &["graph.json", "'pick'", "'nope'"]);

    // An undefined graph output.
    std::fs::write(case.join("graph.json"), with_graph_outputs("[\"w\"]")).unwrap();
    assert_error(&exec(&case, &[], &out), &out, &["graph.json", "'w'"]);
}

#[test]
fn error_missing_input() {
    let tmp = tempfile::tempdir().unwrap();
    let case = make_case(tmp.path(), VIEW_GRAPH, &[2, 0, 1, 1]);
    std::fs::remove_file(case.join("inputs/x.npy")).unwrap();
    let out = tmp.path().join("out");
    assert_error(&exec(&case, &[], &out), &out, &["'x'", "--input x="]);

    // A graph file outside any case directory: no inputs/ at all.
    let bare = tmp.path().join("bare.json");
    std::fs::write(&bare, VIEW_GRAPH).unwrap();
    assert_error(&exec(&bare, &[], &out), &out, &["'x'"]);
}

#[test]
fn error_input_with_wrong_dtype() {
    let tmp = tempfile::tempdir().unwrap();
    let case = make_case(tmp.path(), VIEW_GRAPH, &[2, 0, 1, 1]);
    write_npy(
        &case.join("inputs/x.npy"),
        &[4, 3],
        (0..12).map(|i| i as f64).collect(),
    );
    let out = tmp.path().join("out");
    assert_error(
        &exec(&case, &[], &out),
        &out,
        &["inputs/x.npy", "'x'", "f64", "f32"],
    );

    // An index vector of i32 instead of i64.
    let case = make_case(tmp.path(), VIEW_GRAPH, &[2, 0, 1, 1]);
    write_npy(&case.join("inputs/idx.npy"), &[4], vec![2i32, 0, 1, 1]);
    assert_error(&exec(&case, &[], &out), &out, &["'idx'", "i32", "i64"]);
}

#[test]
fn error_input_with_wrong_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let case = make_case(tmp.path(), VIEW_GRAPH, &[2, 0, 1, 1]);
    write_npy(&case.join("inputs/x.npy"), &[3, 4], x_data());
    let out = tmp.path().join("out");
    assert_error(&exec(&case, &[], &out), &out, &["inputs/x.npy", "'x'", "[3, 4]"]);

    // A 2-D index vector where [-1] is declared.
    write_npy(&case.join("inputs/x.npy"), &[4, 3], x_data());
    write_npy(&case.join("inputs/idx.npy"), &[2, 2], vec![2i64, 0, 1, 1]);
    assert_error(&exec(&case, &[], &out), &out, &["'idx'", "[2, 2]"]);
}

#[test]
fn error_unreadable_npy_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let case = make_case(tmp.path(), VIEW_GRAPH, &[2, 0, 1, 1]);
    std::fs::write(case.join("inputs/x.npy"), b"not an npy file").unwrap();
    let out = tmp.path().join("out");
    assert_error(&exec(&case, &[], &out), &out, &["x.npy"]);
}

#[test]
fn error_out_of_range_point_fed_at_run_time() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // x[7] and x[-5] on an axis of length 4.
    for p in [7i64, -5] {
        let case = make_case(tmp.path(), VIEW_GRAPH, &[0, 1, 1, p, 1]);
        let err = assert_error(
            &exec(&case, &[], &out),
            &out,
            &["'pick'", "axis 0", &format!("point {p}"), "length 4"],
        );
        assert!(err.contains("graph.json"), "{err}");
    }
    // x[:, 3]: the second axis has length 3.
    let graph = VIEW_GRAPH
        .replace(r#"{"name": "idx", "dtype": "i64", "shape": [-1]}"#, r#"{"name": "all", "dtype": "i64", "shape": [4]}, {"name": "idx", "dtype": "i64", "shape": [-1]}"#)
        .replace("[\"x\", \"idx\"]", "[\"x\", \"all\", \"idx\"]");
    let case = make_case(tmp.path(), &graph, &[0, 1, 1, 3, 1]);
    write_npy(&case.join("inputs/all.npy"), &[4], vec![2i64, 0, 1, 1]);
    assert_error(
        &exec(&case, &[], &out),
        &out,
        &["'pick'", "axis 1", "point 3", "length 3"],
    );
}

#[test]
fn error_malformed_index_vector() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let bad: &[(&[i64], &str)] = &[
        (&[0, 1, 1, 7], "needs 5 values"),
        (&[1, 2, 1, 0, 3, 1], "needs 7 values"),
        (&[9, 0, 1, 1], "unknown index type 9"),
        (&[1, 2, 1, 0, 3, 0, 0], "stride (slot 5) is 0"),
        (&[3, 1, 10], "needs 4 or 5 values"),
        (&[], "empty index vector"),
    ];
    for (idx, needle) in bad {
        let case = make_case(tmp.path(), VIEW_GRAPH, idx);
        assert_error(&exec(&case, &[], &out), &out, &["'pick'", "index 0", needle]);
    }
}

#[test]
fn error_too_many_indices() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let graph = VIEW_GRAPH.replace("[\"x\", \"idx\"]", "[\"x\", \"idx\", \"idx\", \"idx\"]");
    let case = make_case(tmp.path(), &graph, &[2, 0, 1, 1]);
    assert_error(
        &exec(&case, &[], &out),
        &out,
        &["'pick'", "3 indices", "2 dimensions"],
    );
}

#[test]
fn error_bad_input_flag_syntax() {
    let tmp = tempfile::tempdir().unwrap();
    let case = make_case(tmp.path(), VIEW_GRAPH, &[2, 0, 1, 1]);
    let out = tmp.path().join("out");
    for flag in ["x", "=x.npy", "x="] {
        assert_error(
            &exec(&case, &[OsStr::new("--input"), OsStr::new(flag)], &out),
            &out,
            &[flag],
        );
    }
}

#[test]
fn error_missing_arguments_is_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // No GRAPH.
    let o = vigil([OsStr::new("exec"), OsStr::new("--out"), out.as_os_str()]);
    assert_error(&o, &out, &["GRAPH"]);
}

#[test]
fn error_input_flag_for_unknown_name_or_missing_file() {
    let tmp = tempfile::tempdir().unwrap();
    let case = make_case(tmp.path(), VIEW_GRAPH, &[2, 0, 1, 1]);
    let out = tmp.path().join("out");
    let x = case.join("inputs/x.npy");
    let flag = format!("zz={}", x.display());
    assert_error(
        &exec(&case, &[OsStr::new("--input"), OsStr::new(&flag)], &out),
        &out,
        &["'zz'"],
    );

    let missing = tmp.path().join("no_such.npy");
    let flag = format!("x={}", missing.display());
    assert_error(
        &exec(&case, &[OsStr::new("--input"), OsStr::new(&flag)], &out),
        &out,
        &["no_such.npy"],
    );

    let no_dir = tmp.path().join("no_such_dir");
    assert_error(
        &exec(&case, &[OsStr::new("--inputs-dir"), no_dir.as_os_str()], &out),
        &out,
        &["no_such_dir"],
    );
}

#[test]
fn error_nonexistent_graph_path() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let missing = tmp.path().join("nowhere/graph.json");
    assert_error(&exec(&missing, &[], &out), &out, &["nowhere", "graph.json"]);
    // A directory without graph.json.
    let empty = tmp.path().join("empty_case");
    std::fs::create_dir(&empty).unwrap();
    assert_error(&exec(&empty, &[], &out), &out, &["empty_case", "graph.json"]);
}

/// A failure while writing outputs removes what was written and the
/// directory the run created; an existing directory keeps only its own files.
#[test]
fn error_while_writing_leaves_no_files() {
    let tmp = tempfile::tempdir().unwrap();
    // The second output's name is not a file name: refused before writing.
    let graph = with_graph_outputs(r#"["y", "sub/z"]"#).replace(
        r#""outputs": ["y"]}],"#,
        r#""outputs": ["y"]}, {"name": "neg", "op": "neg", "inputs": ["y"], "outputs": ["sub/z"]}],"#,
    );
    let case = make_case(tmp.path(), &graph, &[2, 0, 1, 1]);
    let out = tmp.path().join("out");
    assert_error(&exec(&case, &[], &out), &out, &["'sub/z'"]);

    let existing = tmp.path().join("existing");
    std::fs::create_dir(&existing).unwrap();
    std::fs::write(existing.join("keep.txt"), "mine").unwrap();
    let o = exec(&case, &[], &existing);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let left: Vec<_> = std::fs::read_dir(&existing)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("keep.txt")]);
}

/// A run-time error with an existing --out directory leaves it as it was.
#[test]
fn error_keeps_existing_out_dir_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let case = make_case(tmp.path(), VIEW_GRAPH, &[0, 1, 1, 9, 1]);
    let out = tmp.path().join("existing");
    std::fs::create_dir(&out).unwrap();
    let o = exec(&case, &[], &out);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

// ----- (c) --input and --inputs-dir ----------------------------------------------

#[test]
fn input_flag_overrides_inputs_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let case = suite().join("interval_exclusive"); // x[2:7] on f64 [10]
    let other = tmp.path().join("other.npy");
    let data: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
    write_npy(&other, &[10], data.clone());
    let out = tmp.path().join("out");
    let flag = format!("x={}", other.display());
    let o = exec(&case, &[OsStr::new("--input"), OsStr::new(&flag)], &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = Tensor::read_npy(out.join("y.npy")).unwrap();
    compare(&got, &Tensor::from_vec(&[5], data[2..7].to_vec()).unwrap()).unwrap();
    assert_eq!(
        read_json(&out.join("manifest.json"))["outputs"]["y"]["view_of"],
        "x"
    );

    // The flag also wins over --inputs-dir.
    let dir = tmp.path().join("dir");
    write_npy(&dir.join("x.npy"), &[10], vec![0.5f64; 10]);
    let out2 = tmp.path().join("out2");
    let o = exec(
        &case,
        &[
            OsStr::new("--inputs-dir"),
            dir.as_os_str(),
            OsStr::new("--input"),
            OsStr::new(&flag),
        ],
        &out2,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    compare(&Tensor::read_npy(out2.join("y.npy")).unwrap(), &got).unwrap();
}

#[test]
fn inputs_dir_replaces_the_case_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let graph = suite().join("interval_exclusive/graph.json");
    let dir = tmp.path().join("dir");
    let data: Vec<f64> = (0..10).map(|i| -(i as f64)).collect();
    write_npy(&dir.join("x.npy"), &[10], data.clone());
    let out = tmp.path().join("out");
    let o = exec(&graph, &[OsStr::new("--inputs-dir"), dir.as_os_str()], &out);
    assert!(o.status.success(), "{}", stderr(&o));
    compare(
        &Tensor::read_npy(out.join("y.npy")).unwrap(),
        &Tensor::from_vec(&[5], data[2..7].to_vec()).unwrap(),
    )
    .unwrap();
}

/// Overriding a fed index vector changes the view: x[0, ::-1] instead of x[-1, ::-1].
#[test]
fn input_flag_overrides_a_fed_index_vector() {
    let tmp = tempfile::tempdir().unwrap();
    let case = suite().join("fed_index_negative");
    let idx = tmp.path().join("idx.npy");
    write_npy(&idx, &[5], vec![0i64, 1, 1, 0, 1]);
    let out = tmp.path().join("out");
    let flag = format!("idx0={}", idx.display());
    let o = exec(&case, &[OsStr::new("--input"), OsStr::new(&flag)], &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let x = Tensor::read_npy(case.join("inputs/x.npy"))
        .unwrap()
        .to_array::<f64>()
        .unwrap();
    let want: Vec<f64> = (0..5).rev().map(|j| x[[0, j]]).collect();
    compare(
        &Tensor::read_npy(out.join("y.npy")).unwrap(),
        &Tensor::from_vec(&[5], want).unwrap(),
    )
    .unwrap();
    let m = &read_json(&out.join("manifest.json"))["outputs"]["y"];
    assert_eq!(
        (m["offset"].as_u64(), m["strides"].clone()),
        (Some(4), serde_json::json!([-1]))
    );

    // A negative point resolved at run time against the actual shape.
    write_npy(&idx, &[5], vec![0i64, 1, 1, -4, 1]);
    let out2 = tmp.path().join("out2");
    let o = exec(&case, &[OsStr::new("--input"), OsStr::new(&flag)], &out2);
    assert!(o.status.success(), "{}", stderr(&o));
    compare(
        &Tensor::read_npy(out2.join("y.npy")).unwrap(),
        &Tensor::read_npy(out.join("y.npy")).unwrap(),
    )
    .unwrap();
}
