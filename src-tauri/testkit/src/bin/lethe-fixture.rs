//! Test support for the window's end-to-end tests: `lethe-fixture KIND PATH` writes a memento
//! database at PATH (which must not exist). KIND is `memento-0.1` (memento 0.1.0's own schema,
//! run verbatim) or `memento-1.36`. Prints `{"fixture":KIND,"path":PATH}`; a bad call prints
//! the error on stderr and exits with 2.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, path] = args.as_slice() else {
        eprintln!("usage: lethe-fixture memento-0.1|memento-1.36 PATH");
        std::process::exit(2);
    };
    let built = kind.parse().and_then(|k| lethe_testkit::fixtures::build_memento(std::path::Path::new(path), k));
    match built {
        Ok(()) => println!("{}", serde_json::json!({ "fixture": kind, "path": path })),
        Err(e) => {
            eprintln!("{}", serde_json::json!({ "error": { "code": e.code(), "message": e.to_string() } }));
            std::process::exit(e.exit_code());
        }
    }
}
