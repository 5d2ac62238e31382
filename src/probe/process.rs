//! A node daemon as `/proc` shows it (the node's processes, on the node or in a `hostPID` pod):
//! the kubelet, whose flags name its credential sources and whose environment its plugins
//! inherit, and containerd, whose `--config` and environment (proxy, trust) decide its pulls.
//! Each is read once per probe.

use std::collections::BTreeMap;
use std::path::Path;

use super::proxy::parse_environ;

/// A running process: its command line, and its environment when it could be read (another
/// user's, or a full-capability daemon's, needs `CAP_SYS_PTRACE`).
#[derive(Debug, Clone, Default)]
pub struct RunningProcess {
    pub pid: u32,
    pub args: Vec<String>,
    pub environ: Option<BTreeMap<String, String>>,
}

impl RunningProcess {
    /// `pid`'s command line and environment, or those of the lowest pid named `comm`.
    pub fn read(proc: &Path, pid: Option<u32>, comm: &str) -> Option<RunningProcess> {
        let pid = match pid {
            Some(pid) => pid,
            None => process_named(proc, comm)?,
        };
        let dir = proc.join(pid.to_string());
        let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
        Some(RunningProcess {
            pid,
            args: cmdline
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect(),
            environ: std::fs::read(dir.join("environ"))
                .ok()
                .map(|bytes| parse_environ(&bytes)),
        })
    }

    /// A flag's value as Go's flag package takes it: `--name=value` or `--name value`
    /// (one or two dashes), the last one winning.
    pub fn flag(&self, name: &str) -> Option<String> {
        let mut found = None;
        let mut args = self.args.iter().skip(1);
        while let Some(arg) = args.next() {
            let Some(bare) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
                continue;
            };
            if let Some(value) = bare.strip_prefix(name).and_then(|v| v.strip_prefix('=')) {
                found = Some(value.to_string());
            } else if bare == name {
                found = args.next().cloned();
            }
        }
        found
    }
}

/// The lowest pid under `proc` whose process is named `comm` (`containerd`, `kubelet`).
pub fn process_named(proc: &Path, comm: &str) -> Option<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir(proc)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    pids.into_iter().find(|pid| {
        std::fs::read_to_string(proc.join(pid.to_string()).join("comm"))
            .is_ok_and(|name| name.trim() == comm)
    })
}
