//! Writes `suites/broken`: the self-test corpus (ops with known defects, and
//! their correct twins) as suite cases, each with `expect.json` naming the
//! finding kind it must give (or none) and the kinds its effect must also
//! cause, under `vigil run`'s default (debug) mode.
//!
//! `cargo run --example gen_broken_suite -- suites/broken`

use std::path::Path;

use vigil::engine::Feeds;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "suites/broken".into());
    let out = Path::new(&out);
    let mut lines = vec![
        "# suites/broken".to_string(),
        String::new(),
        "Graphs using Vigil's broken-op corpus. `vigil run suites` skips this directory because".to_string(),
        "these cases are meant to fail; `vigil run suites/broken` shows each defect caught, and".to_string(),
        "`expect.json` says which finding each case must give. Regenerate with".to_string(),
        "`cargo run --example gen_broken_suite -- suites/broken`.".to_string(),
        String::new(),
    ];
    // Listener cases (a panicking listener is no property of a graph).
    let mut cases: Vec<(String, vigil::engine::Graph, Feeds, Vec<String>)> = Vec::new();
    for case in vigil_listeners::selftest::cases() {
        if case.name == "panicking_listener" {
            continue;
        }
        let (graph, feeds) = (case.build)()?;
        let kinds = case
            .expected
            .iter()
            .chain(&case.debug_also)
            .map(|k| k.to_string())
            .collect();
        cases.push((case.name.clone(), graph, feeds, kinds));
    }
    // DebugMode cases that `vigil run`'s default checks catch.
    for case in vigil_debugmode::selftest::cases() {
        if let Some(kinds) = case.default_kinds {
            let (graph, feeds) = (case.build)(&case.op)?;
            cases.push((
                case.name,
                graph,
                feeds,
                kinds.iter().map(|k| k.to_string()).collect(),
            ));
        }
    }
    for (name, graph, feeds, kinds) in cases {
        let dir = out.join(&name);
        std::fs::create_dir_all(dir.join("inputs"))?;
        std::fs::write(dir.join("graph.json"), graph.to_json()? + "\n")?;
        let mut names: Vec<&String> = feeds.keys().collect();
        names.sort();
        for name in names {
            feeds[name].write_npy(dir.join("inputs").join(format!("{name}.npy")))?;
        }
        let expect = match kinds.split_first() {
            None => serde_json::json!({ "finding": null }),
            Some((first, [])) => serde_json::json!({ "finding": first }),
            Some((first, also)) => serde_json::json!({ "finding": first, "also": also }),
        };
        std::fs::write(dir.join("expect.json"), expect.to_string() + "\n")?;
        let said = if kinds.is_empty() {
            "no finding".to_string()
        } else {
            kinds.join(" + ")
        };
        lines.push(format!("- `{name}`: {said}"));
    }
    std::fs::write(out.join("README.md"), lines.join("\n") + "\n")?;
    Ok(())
}
