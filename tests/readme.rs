//! The README's commands, run as written against the built `vigil`, so the
//! front page cannot drift from the tool: every `vigil ...` line of its
//! `sh` blocks runs (in a scratch directory that sees the shipped
//! `suites/`), exits as its comment says (`# exit 1`, else 0), and when a
//! `text` block follows, the documented lines appear in the output, in
//! order, with numbers and column padding left free.

use std::path::Path;
use std::process::Command;

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A fenced code block: its language and lines.
struct Block {
    lang: String,
    lines: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<Block> = None;
    for line in text.lines() {
        match (line.strip_prefix("```"), current.take()) {
            (Some(lang), None) => {
                current = Some(Block {
                    lang: lang.trim().to_string(),
                    lines: Vec::new(),
                })
            }
            (Some(_), Some(b)) => out.push(b),
            (None, Some(mut b)) => {
                b.lines.push(line.to_string());
                current = Some(b);
            }
            (None, None) => {}
        }
    }
    out
}

/// A command line without its comment, and the exit code the comment
/// documents (`# exit 1: ...`; 0 when it says none).
fn command(line: &str) -> (String, i32) {
    let (cmd, comment) = line.split_once(" #").unwrap_or((line, ""));
    let code = comment
        .split_once("exit ")
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .unwrap_or(0);
    (cmd.trim().to_string(), code)
}

/// A line with its numbers as `#`, box-drawing runs as one character and
/// whitespace runs as one space, so counts, times and column widths may
/// differ from the README's.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|&d| d.is_ascii_digit() || d == ',' || d == '.')
            {
                chars.next();
            }
            out.push('#');
        } else if c.is_whitespace() || matches!(c, '─' | '┄' | '═') {
            while chars.peek() == Some(&c) {
                chars.next();
            }
            out.push(if c.is_whitespace() { ' ' } else { c });
        } else {
            out.push(c);
        }
    }
    // A number that ends a sentence keeps its full stop.
    out.replace("#.", "#").trim_end().to_string()
}

/// A scratch directory whose `suites` is the repository's.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let suites = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites");
    std::os::unix::fs::symlink(&suites, dir.path().join("suites")).unwrap();
    dir
}

fn run(cwd: &Path, cmd: &str) -> (i32, String) {
    let mut words = cmd.split_whitespace();
    assert_eq!(words.next(), Some("vigil"), "{cmd}");
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(words)
        .current_dir(cwd)
        .output()
        .expect("run vigil");
    let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    (o.status.code().unwrap_or(-1), text)
}

#[test]
fn the_set_up_lines_are_the_documented_ones() {
    let text = readme();
    let sh: Vec<String> = blocks(&text)
        .into_iter()
        .filter(|b| b.lang == "sh")
        .flat_map(|b| b.lines)
        .collect();
    let find = |cmd: &str| -> &String {
        sh.iter()
            .find(|l| command(l).0 == cmd)
            .unwrap_or_else(|| panic!("the README has no `{cmd}` line"))
    };
    find("cargo install --path . --locked --bin vigil");
    let suites = find("cargo run --release -- run suites");
    assert!(
        suites.contains("debug mode, the default"),
        "its comment must say which mode runs: {suites}"
    );
    find("cargo test --workspace");
    assert!(
        text.lines().count() <= 150,
        "the README is a front page: at most 150 lines"
    );
}

#[test]
fn the_readme_commands_run_and_print_what_it_shows() {
    let text = readme();
    let blocks = blocks(&text);
    let dir = scratch();
    let mut ran = 0;
    for (i, b) in blocks.iter().enumerate() {
        if b.lang != "sh" {
            continue;
        }
        let mut last = None;
        for line in &b.lines {
            let (cmd, want) = command(line);
            // `cargo run --release -- ARGS` is `vigil ARGS` built by cargo.
            let cmd = match cmd.strip_prefix("cargo run --release -- ") {
                Some(args) => format!("vigil {args}"),
                None => cmd,
            };
            if !cmd.starts_with("vigil ") {
                continue;
            }
            let (code, out) = run(dir.path(), &cmd);
            assert_eq!(
                code, want,
                "`{cmd}` exited {code}, the README says {want}:\n{out}"
            );
            ran += 1;
            last = Some((cmd, out));
        }
        // The output shown after the block is that of its last command.
        let (Some(shown), Some((cmd, out))) = (blocks.get(i + 1), last) else {
            continue;
        };
        if shown.lang != "text" {
            continue;
        }
        let got: Vec<String> = out.lines().map(shape).collect();
        let mut at = 0;
        for want in shown
            .lines
            .iter()
            .filter(|l| l.trim() != "…" && !l.trim().is_empty())
        {
            let want = shape(want);
            match got[at..].iter().position(|g| *g == want) {
                Some(k) => at += k + 1,
                None => panic!("`{cmd}` printed no line shaped like\n  {want}\nafter line {at} of:\n{out}"),
            }
        }
    }
    assert!(ran >= 5, "only {ran} vigil commands found in the README");
}

#[test]
fn shapes_leave_numbers_and_padding_free() {
    assert_eq!(
        shape("406 cases: 406 passed, 0 failed, 0 errors, 0 warnings"),
        shape("1,234 cases: 9 passed,  7 failed, 3 errors, 12 warnings")
    );
    assert_eq!(shape("│ a   │ b │"), shape("│ a │ b       │"));
    assert_eq!(shape("├──┼─┤"), shape("├──────┼───┤"));
    assert_ne!(shape("1 case"), shape("1 cases"));
    assert_eq!(
        command("vigil run suites/broken   # exit 1: the defects"),
        ("vigil run suites/broken".to_string(), 1)
    );
    assert_eq!(
        command("vigil explain small"),
        ("vigil explain small".to_string(), 0)
    );
}
