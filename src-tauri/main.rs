// Prevents an extra console window on Windows in release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // The file chooser runs as a child process of the window (see chooser.rs).
    let args: Vec<String> = std::env::args().collect();
    if let Some(code) = lethe_app::file_chooser(&args) {
        std::process::exit(code);
    }
    lethe_app::run();
}
