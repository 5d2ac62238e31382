//! Running a node program inside the node's root (a chroot through this binary's hidden
//! subcommand), because a plugin opens node paths that only the kernel can make the node's.

use std::path::Path;

use crate::node_root::NodeRoot;

/// The hidden subcommand that runs a program inside a node root: `pullpath ROOT_EXEC ROOT
/// PROGRAM ARGS…` chroots into ROOT, changes to its `/` and executes PROGRAM there. A chroot
/// rather than a path prefix because the plugin itself opens node paths (its config file, the
/// node's trust store, its shared libraries), and only the kernel can make all of those the
/// node's. It needs `CAP_SYS_CHROOT` (root in the probe pod).
pub const ROOT_EXEC: &str = "__exec-in-node-root";

/// A command that runs `program` (a node path) as on the node: directly when this is the node,
/// else through this binary's [`ROOT_EXEC`] inside the node root.
pub fn in_node_root(node: &NodeRoot, program: &Path) -> std::io::Result<tokio::process::Command> {
    if node.is_host() {
        return Ok(tokio::process::Command::new(program));
    }
    let mut command = tokio::process::Command::new(std::env::current_exe()?);
    command.arg(ROOT_EXEC).arg(node.mount()).arg(program);
    Ok(command)
}

/// [`ROOT_EXEC`]'s body: chroot into `root`, then replace this process with `program`. Returns
/// only on failure.
pub fn exec_in_root(root: &Path, program: &Path, args: &[std::ffi::OsString]) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    if let Err(e) = std::os::unix::fs::chroot(root).and_then(|()| std::env::set_current_dir("/")) {
        return std::io::Error::new(e.kind(), format!("chroot {}: {e}", root.display()));
    }
    std::process::Command::new(program).args(args).exec()
}
