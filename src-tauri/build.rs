fn main() {
    // The capability files live beside the shell's sources, not at the repository root.
    tauri_build::try_build(tauri_build::Attributes::new().capabilities_path_pattern("./src-tauri/capabilities/**/*"))
        .expect("failed to run tauri-build");
}
