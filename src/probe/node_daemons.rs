//! Which kubelet and which runtime are the node's, and how each was found: the kubelet (a
//! `kubelet` process, or k3s running one inside its own), its CRI endpoint, then the process
//! listening on that socket — the runtime the kubelet talks to, not the lowest pid with a
//! runtime's name (Bottlerocket runs two containerds; k3s and RKE2 run theirs as a child).
//! What could not be resolved falls back, and says so.

use std::path::Path;

use super::kubelet_config::{self, Sourced};
use super::process::{self, RunningProcess};
use super::rancher;
use crate::node_root::NodeRoot;

/// How a node daemon was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundHow {
    /// `--kubelet-pid` / `--runtime-pid`.
    Flag,
    /// The process listening on the kubelet's CRI socket.
    SocketListener,
    /// The kubelet runs inside another process (k3s).
    Embedded,
    /// The lowest pid with the daemon's name.
    LowestNamed,
}

impl FoundHow {
    /// The report's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            FoundHow::Flag => "flag",
            FoundHow::SocketListener => "socket-listener",
            FoundHow::Embedded => "embedded",
            FoundHow::LowestNamed => "lowest-pid-named",
        }
    }
}

/// A node daemon as found: the process, how, and in words why.
#[derive(Debug, Clone)]
pub struct Daemon {
    pub process: RunningProcess,
    pub how: FoundHow,
    pub detail: String,
}

/// The node's kubelet and runtime, the endpoint between them, and what was read to decide.
#[derive(Debug, Clone)]
pub struct NodeDaemons {
    pub kubelet: Option<Daemon>,
    pub runtime: Option<Daemon>,
    pub endpoint: Sourced,
    pub notes: Vec<String>,
}

/// Where to look for the node's daemons, and what the command line fixed.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    /// The node's `/proc` (on the node, or in a `hostPID` pod).
    pub proc: &'a Path,
    pub node: &'a NodeRoot,
    pub kubelet_pid: Option<u32>,
    pub runtime_pid: Option<u32>,
    /// `--runtime-endpoint`, a node path or `unix://` URL.
    pub endpoint: Option<&'a str>,
}

impl NodeDaemons {
    /// The node's kubelet, its CRI endpoint and the runtime listening there.
    pub fn find(lookup: Lookup<'_>) -> NodeDaemons {
        let Lookup { proc, node, .. } = lookup;
        let mut notes = Vec::new();
        let kubelet = find_kubelet(proc, node, lookup.kubelet_pid, &mut notes);
        let lowest_containerd = || RunningProcess::read(proc, None, "containerd");
        let endpoint = match lookup.endpoint {
            Some(given) => Sourced {
                value: given.to_string(),
                origin: "--runtime-endpoint".into(),
            },
            None => kubelet_config::runtime_endpoint(
                node,
                kubelet.as_ref().map(|k| &k.process),
                kubelet.is_none().then(lowest_containerd).flatten().as_ref(),
            ),
        };
        let runtime = match lookup.runtime_pid {
            Some(pid) => RunningProcess::of_pid(proc, pid).map(|process| Daemon {
                process,
                how: FoundHow::Flag,
                detail: format!("--runtime-pid {pid}"),
            }),
            None => {
                let netns = kubelet.as_ref().map(|k| k.process.pid);
                match listener(proc, node, netns, &endpoint) {
                    Ok(daemon) => Some(daemon),
                    Err(why) => lowest_containerd().map(|process| Daemon {
                        detail: format!(
                            "the lowest pid named containerd ({pid}), as the kubelet's socket's listener was not found: {why}",
                            pid = process.pid
                        ),
                        process,
                        how: FoundHow::LowestNamed,
                    }),
                }
            }
        };
        NodeDaemons {
            kubelet,
            runtime,
            endpoint,
            notes,
        }
    }
}

/// The kubelet: `--kubelet-pid`, else the process named `kubelet` (one per node), else k3s,
/// which runs its kubelet inside its own process.
fn find_kubelet(
    proc: &Path,
    node: &NodeRoot,
    pid: Option<u32>,
    notes: &mut Vec<String>,
) -> Option<Daemon> {
    if let Some(pid) = pid {
        return RunningProcess::of_pid(proc, pid).map(|process| Daemon {
            process,
            how: FoundHow::Flag,
            detail: format!("--kubelet-pid {pid}"),
        });
    }
    if let Some(process) = RunningProcess::read(proc, None, "kubelet") {
        let detail = format!("the process named kubelet (pid {})", process.pid);
        return Some(Daemon {
            process,
            how: FoundHow::LowestNamed,
            detail,
        });
    }
    let agent = rancher::k3s_process(proc)?;
    let (process, read) = rancher::embedded_kubelet(node, &agent);
    notes.extend(read.iter().map(|r| format!("the kubelet inside k3s: {r}")));
    Some(Daemon {
        detail: format!(
            "no kubelet process: k3s (pid {}) runs the kubelet inside its own, with the flags it builds from its config and kubelet-arg",
            agent.pid
        ),
        process,
        how: FoundHow::Embedded,
    })
}

/// Why the kubelet's socket's listener was not found.
#[derive(Debug, thiserror::Error)]
pub enum NoListener {
    #[error("{0} is not a unix socket")]
    NotUnix(String),
    #[error(transparent)]
    Listener(#[from] process::ListenerProblem),
    #[error("pid {pid} listens on {socket} but cannot be read")]
    Unreadable { pid: u32, socket: String },
    #[error("no process serves {0}")]
    Unserved(String),
}

/// The process listening on the endpoint's socket, seen from the kubelet's network namespace.
fn listener(
    proc: &Path,
    node: &NodeRoot,
    netns: Option<u32>,
    endpoint: &Sourced,
) -> Result<Daemon, NoListener> {
    let value = endpoint.value.as_str();
    let socket = match value.strip_prefix("unix://") {
        Some(path) => path,
        None if value.starts_with('/') => value,
        None => return Err(NoListener::NotUnix(value.to_string())),
    };
    // The same socket spelled another way (`/var/run` for `/run`) resolves to the same place.
    let canonical = |path: &str| {
        node.resolve(Path::new(path))
            .and_then(std::fs::canonicalize)
            .ok()
    };
    let wanted = canonical(socket);
    let same = |path: &str| wanted.is_some() && canonical(path) == wanted;
    let holders = process::socket_listeners(proc, netns, socket, &same)?;
    // Several: those that see, at that path, the very file the kubelet connects to (a
    // container in the node's network namespace may bind the same path in its own mount
    // namespace).
    let node_file = file_id(&node.resolve(Path::new(socket)).unwrap_or_default());
    let seeing: Vec<u32> = holders
        .iter()
        .copied()
        .filter(|pid| {
            let theirs = proc
                .join(pid.to_string())
                .join("root")
                .join(socket.trim_start_matches('/'));
            node_file.is_some() && file_id(&theirs) == node_file
        })
        .collect();
    let candidates = match (holders.len(), seeing.is_empty()) {
        (1, _) | (_, true) => holders,
        _ => seeing,
    };
    let Some((pid, others)) = process::serving_holder(&candidates) else {
        return Err(NoListener::Unserved(socket.to_string()));
    };
    let process = RunningProcess::of_pid(proc, pid).ok_or_else(|| NoListener::Unreadable {
        pid,
        socket: socket.to_string(),
    })?;
    let also = match others.is_empty() {
        true => String::new(),
        false => format!(
            " (also held by pid {})",
            others
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Ok(Daemon {
        process,
        how: FoundHow::SocketListener,
        detail: format!(
            "the process listening on {socket} (pid {pid}), the kubelet's endpoint ({}){also}",
            endpoint.origin
        ),
    })
}

/// A file's device and inode, as `stat` gives them (following links).
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_is_the_listener_of_the_kubelets_socket() {
        // This test process listens on a socket a kubelet stand-in names; a decoy named
        // containerd is not looked at.
        let dir = std::env::temp_dir().join(format!("pullpath-daemons-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let socket = dir.join("containerd.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
        let node = NodeRoot::host();
        let endpoint = format!("unix://{}", socket.display());
        let found = NodeDaemons::find(Lookup {
            proc: Path::new("/proc"),
            node: &node,
            kubelet_pid: Some(0),
            runtime_pid: None,
            endpoint: Some(&endpoint),
        });
        let runtime = found.runtime.expect("the listener");
        assert_eq!(runtime.process.pid, std::process::id());
        assert_eq!(runtime.how, FoundHow::SocketListener);
        assert!(
            runtime.detail.contains("--runtime-endpoint"),
            "{}",
            runtime.detail
        );
        assert!(found.kubelet.is_none(), "pid 0 is no process");

        // Nothing listens: the fallback says why.
        let absent = format!("unix://{}", dir.join("absent.sock").display());
        let found = NodeDaemons::find(Lookup {
            proc: Path::new("/proc"),
            node: &node,
            kubelet_pid: Some(0),
            runtime_pid: None,
            endpoint: Some(&absent),
        });
        if let Some(runtime) = found.runtime {
            assert_eq!(runtime.how, FoundHow::LowestNamed);
            assert!(
                runtime.detail.contains("no socket listens"),
                "{}",
                runtime.detail
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
