//! Writes `suites/broken`: the self-test corpus (ops with known defects, and
//! their correct twins) as suite cases, each with `expect.json` naming the
//! one finding kind it must give (or none).
//!
//! `cargo run --example gen_broken_suite -- suites/broken`

use std::path::Path;

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
    for case in vigil_listeners::selftest::cases() {
        let (graph, feeds) = (case.build)()?;
        let dir = out.join(&case.name);
        std::fs::create_dir_all(dir.join("inputs"))?;
        std::fs::write(dir.join("graph.json"), graph.to_json()? + "\n")?;
        let mut names: Vec<&String> = feeds.keys().collect();
        names.sort();
        for name in names {
            feeds[name].write_npy(dir.join("inputs").join(format!("{name}.npy")))?;
        }
        let expected = case.expected.as_ref().map(|k| k.name());
        std::fs::write(
            dir.join("expect.json"),
            serde_json::json!({ "finding": expected }).to_string() + "\n",
        )?;
        lines.push(format!("- `{}`: {}", case.name, expected.unwrap_or("no finding")));
    }
    std::fs::write(out.join("README.md"), lines.join("\n") + "\n")?;
    Ok(())
}
