include!("window_commands.rs");

fn main() {
    println!("cargo:rerun-if-changed=src-tauri/window_commands.rs");
    // The capability files live beside the shell's sources, not at the repository root.
    // The app manifest makes Tauri check the app's own commands against the capabilities
    // too: a command outside WINDOW_COMMANDS, or not granted to the window, is refused.
    let attributes = tauri_build::Attributes::new()
        .capabilities_path_pattern("./src-tauri/capabilities/**/*")
        .app_manifest(tauri_build::AppManifest::new().commands(WINDOW_COMMANDS));
    tauri_build::try_build(attributes).expect("failed to run tauri-build");
}
