//! Prints the self-test results as JSON: `cargo run -p vigil-listeners --example selftest`.

fn main() {
    let results = vigil_listeners::run_selftest();
    match serde_json::to_string_pretty(&results) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("{e}"),
    }
    let failed = results.iter().filter(|r| !r.pass).count();
    eprintln!("{} cases, {failed} failed", results.len());
    if failed > 0 {
        std::process::exit(1);
    }
}
