//! A small, realistic report shared by the integration tests: a passing
//! case, a passing case with a warning, two failing cases and one that
//! could not run.

#![allow(dead_code)]

use serde_json::json;
use vigil_reports::{Case, ErrorSample, Finding, OutputComparison, Report, TimelineEntry};

/// A message with everything a renderer must escape.
pub const NASTY: &str = "log of <script>alert(1)</script> | x & y\nsecond line";

pub fn timeline(nodes: &[(&str, &str)]) -> Vec<TimelineEntry> {
    let mut start = 0;
    nodes
        .iter()
        .enumerate()
        .map(|(i, (node, op))| {
            let dur = 40 + (i as u64 * 37) % 120;
            let e = TimelineEntry {
                node: node.to_string(),
                op: op.to_string(),
                start_us: start,
                dur_us: dur,
                swept: false,
            };
            start += dur + 5;
            e
        })
        .collect()
}

pub fn cases() -> Vec<Case> {
    let mut y = OutputComparison::new("y", 4096);
    y.max_abs_err = 0.75;
    y.max_rel_err = 1.5;
    y.mismatched = 96;
    y.atol = Some(1e-5);
    y.rtol = Some(1e-4);
    let errors: Vec<f64> = (0..4096)
        .map(|i| {
            if (1024..1120).contains(&i) {
                0.25 + 0.5 * ((i - 1024) as f64 / 96.0)
            } else {
                1e-7
            }
        })
        .collect();
    y.sample = Some(ErrorSample::from_errors(&errors));
    let mut z = OutputComparison::new("z", 4096);
    z.max_abs_err = 2e-7;
    z.max_rel_err = 1e-6;

    let transpose = Case::new("transpose_inplace", "suites/views/transpose_inplace")
        .with_duration_ms(42)
        .with_finding(
            Finding::error(
                "destroyed_input",
                "input 0 ('x') changed, but the op's destroy_map does not declare it",
            )
            .at("t1", "transpose_inplace")
            .with_input(0)
            .with_details(json!({
                "mode": "hash", "input": 0, "var": "x", "buffer": 3,
                "view_hash_before": "9f86d081884c7d65", "view_hash_after": "2c26b46b68ffc68f",
                "view_bytes": 16384, "shape": [64, 64], "strides": [64, 1], "offset": 0
            })),
        )
        .with_finding(
            Finding::warning(
                "declared_view_not_aliased",
                "output 0 is declared a view of input 0 but is a copy",
            )
            .at("r", "reshape")
            .with_output(0),
        )
        .with_finding(
            Finding::error(
                "output_mismatch",
                "output 'y' differs from expected in 96 of 4096 elements",
            )
            .with_output(0)
            .with_details(
                json!({"max_abs_err": 0.75, "max_rel_err": 1.5, "mismatched": 96, "elements": 4096}),
            ),
        )
        .with_output(y)
        .with_output(z)
        .with_timeline(timeline(&[
            ("x", "input"),
            ("t1", "transpose_inplace"),
            ("r", "reshape"),
            ("y", "add"),
        ]));

    let log = Case::new("log_zero", "suites/numerics/log_zero")
        .with_duration_ms(7)
        .with_finding({
            let mut f = Finding::error("non_finite", "")
                .at("l", "log")
                .with_output(0)
                .with_details(json!({"health": {"nan": 0, "neg_inf": 3, "pos_inf": 0}}));
            // Set directly: a report read from a file may hold any text,
            // newlines included, and renderers must escape it.
            f.message = NASTY.to_string();
            f
        });

    let bad = Case::new("bad_graph", "suites/views/bad_graph")
        .with_duration_ms(1)
        .errored("graph.json: node 'n3' uses unknown op 'frobnicate'");

    let ok = Case::new("add_two_views", "suites/views/add_two_views")
        .with_duration_ms(3)
        .with_output(OutputComparison::new("out", 16))
        .with_timeline(timeline(&[("a", "slice"), ("b", "slice"), ("c", "add")]));

    let warn = Case::new("relu_declared", "suites/views/relu_declared")
        .with_duration_ms(2)
        .with_finding(
            Finding::warning(
                "declared_destroy_unused",
                "the op declares it destroys input 0 ('h') but never wrote it",
            )
            .at("r", "relu_inplace")
            .with_input(0),
        );
    vec![transpose, log, bad, ok, warn]
}

/// The fixture, with a fixed version so the bytes do not change per release.
pub fn report() -> Report {
    Report::new("validate", cases()).with_vigil_version("0.1.0-test")
}
