//! `lethe`: the agents' command line. One JSON document on stdout; errors as JSON on stderr
//! with the exit codes of docs/cli.md (2 invalid input, 3 conflict, 4 not found,
//! 5 confirmation required, 1 anything else).

mod commands;
mod mcp;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match commands::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or("invalid arguments").trim_start_matches("error: ").to_string();
            print_error("invalid_input", &first);
            return ExitCode::from(2);
        }
    };
    match commands::run(cli) {
        Ok(value) => {
            if let Some(v) = value {
                use std::io::Write;
                // A closed pipe (e.g. `| head`) is not an error worth a panic.
                let _ = writeln!(
                    std::io::stdout(),
                    "{}",
                    serde_json::to_string_pretty(&v).unwrap_or_else(|_| "null".into())
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            print_error(e.code(), &e.to_string());
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn print_error(code: &str, message: &str) {
    eprintln!("{}", serde_json::json!({ "error": { "code": code, "message": message } }));
}
