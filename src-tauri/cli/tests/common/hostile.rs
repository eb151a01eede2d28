//! The hostile arguments of RELIABILITY.md 4b, shared by the suite on an SQLite file
//! (`reliability.rs`) and the one on a team server (`team.rs`): every case must exit 2 with
//! `invalid_input`, one JSON error on stderr, and write nothing.

use std::path::{Path, PathBuf};

/// The input files some cases read, written into a directory of the test's.
pub struct Inputs {
    files: Vec<PathBuf>,
}

impl Inputs {
    /// Writes a non-UTF-8 file, a 10 MiB file and a file with a NUL byte into `dir`.
    pub fn write(dir: &Path) -> Inputs {
        let files = [
            ("latin1.txt", b"caf\xe9 cr\xe8me \xff\xfe".to_vec()),
            ("huge.txt", "x".repeat(10 * 1024 * 1024).into_bytes()),
            ("nul.txt", b"before\0after".to_vec()),
        ]
        .into_iter()
        .map(|(name, bytes)| {
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        })
        .collect();
        Inputs { files }
    }

    /// Removes the files again.
    pub fn remove(self) {
        for p in self.files {
            std::fs::remove_file(p).unwrap();
        }
    }

    fn arg(&self, i: usize) -> String {
        self.files[i].to_str().unwrap().to_string()
    }
}

fn nested(depth: usize, open: &str, close: &str, leaf: &str) -> String {
    format!("{}{leaf}{}", open.repeat(depth), close.repeat(depth))
}

/// The cases, each a name and the arguments after `--db`; `procedure` is the id of a
/// procedural memory in the store.
pub fn cases(inputs: &Inputs, procedure: &str) -> Vec<(&'static str, Vec<String>)> {
    let deep_array = nested(10_000, "[", "]", "\"x\"");
    let deep_object = nested(10_000, "{\"a\":", "}", "1");
    let deep_note = format!(
        "{{\"failure_type\":\"tool_error\",\"failure_description\":\"x\",\"lessons_learned\":{}}}",
        nested(10_000, "[", "]", "1")
    );
    let (p, h, n, d) = (inputs.arg(0), inputs.arg(1), inputs.arg(2), procedure);
    let remember = ["remember", "--type", "semantic", "--content", "a perfectly fine memory"];
    let procedural = ["remember", "--type", "procedural", "--content", "a procedure"];
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("non-UTF-8 content file", vec!["remember", "--type", "semantic", "--content-file", &p]),
        ("10 MiB content file", vec!["remember", "--type", "semantic", "--content-file", &h]),
        ("NUL in content", vec!["remember", "--type", "semantic", "--content-file", &n]),
        ("10,000-deep --steps", [&procedural[..], &["--steps", &deep_array]].concat()),
        ("10,000-deep --trigger-conditions", [&procedural[..], &["--trigger-conditions", &deep_object]].concat()),
        ("10,000-deep reflect --note", vec!["reflect", d, "--note", &deep_note]),
        ("10,000-deep reflect --note (array)", vec!["reflect", d, "--note", &deep_array]),
        ("negative importance", [&remember[..], &["--importance=-0.5"]].concat()),
        ("negative importance, separate", [&remember[..], &["--importance", "-1"]].concat()),
        ("NaN importance", [&remember[..], &["--importance", "NaN"]].concat()),
        ("infinite importance", [&remember[..], &["--importance", "inf"]].concat()),
        ("importance command, NaN", vec!["importance", d, "NaN"]),
        ("importance command, negative", vec!["importance", d, "--", "-0.1"]),
        ("created_at before year 0", [&remember[..], &["--created-at", "-0001-06-01T00:00:00Z"]].concat()),
        ("created_at far future", [&remember[..], &["--created-at", "9999-12-31T23:59:59Z"]].concat()),
        ("created_at garbage", [&remember[..], &["--created-at", "yesterday"]].concat()),
        ("--now garbage", [&["--now", "not a time"][..], &remember[..]].concat()),
        ("--now empty", [&["--now", ""][..], &remember[..]].concat()),
        ("--now month 13", [&["--now", "2026-13-01T00:00:00Z"][..], &remember[..]].concat()),
        ("--now five-digit year", [&["--now", "+99999-01-01T00:00:00Z"][..], &remember[..]].concat()),
        ("unknown flag", [&remember[..], &["--no-such-flag"]].concat()),
        ("unknown subcommand", vec!["obliterate", "--all"]),
        ("unknown type", vec!["remember", "--type", "eternal", "--content", "x"]),
        ("actor with a newline", vec!["--actor", "agent:x\ny", "remember", "--type", "semantic", "--content", "x"]),
        ("weights not numbers", vec!["recall", "x", "--weights", "a,b,c,d"]),
        ("negative weights", vec!["recall", "x", "--weights=-1,0,0,0"]),
        ("limit not a number", vec!["list", "--limit", "-3"]),
        ("settings: threshold NaN", vec!["settings", "threshold", "NaN"]),
        ("settings: unknown key", vec!["settings", "no.such.key", "1"]),
    ];
    cases.into_iter().map(|(what, args)| (what, args.into_iter().map(str::to_string).collect())).collect()
}
