//! Compile the vendored CRI proto into Rust: the messages and the client stubs pullpath uses
//! (no servers). Usage: `gen-cri PROTO_DIR OUT_DIR`; scripts/gen-cri.sh adds the header.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [proto_dir, out_dir] = args.as_slice() else {
        eprintln!("usage: gen-cri PROTO_DIR OUT_DIR");
        return ExitCode::from(64);
    };
    let descriptors = match protox::compile(["api.proto"], [proto_dir]) {
        Ok(descriptors) => descriptors,
        Err(e) => {
            eprintln!("gen-cri: cannot compile {}/api.proto: {e}", proto_dir.display());
            return ExitCode::from(65);
        }
    };
    let generated = tonic_prost_build::configure()
        .build_server(false)
        .build_transport(false)
        .emit_rerun_if_changed(false)
        .out_dir(out_dir)
        .compile_fds(descriptors);
    match generated {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen-cri: cannot generate into {}: {e}", out_dir.display());
            ExitCode::from(70)
        }
    }
}
