//! A node daemon as `/proc` shows it (the node's processes, on the node or in a `hostPID` pod):
//! the kubelet, whose flags name its credential sources and whose environment its plugins
//! inherit, and containerd, whose `--config` and environment (proxy, trust) decide its pulls.
//! Each is read once per probe.
//!
//! Which containerd is the kubelet's is decided by the socket, not the name: Bottlerocket runs
//! `host-containerd` (`/usr/bin/containerd --config /etc/host-containerd/config.toml`, listening
//! on `/run/host-containerd/containerd.sock`, no CRI plugin) before the Kubernetes containerd
//! (`/usr/bin/containerd`, `/etc/containerd/config.toml`, `/run/containerd/containerd.sock`)
//! (bottlerocket-core-kit `packages/host-ctr/host-containerd.service`,
//! `host-containerd-config.toml`, `packages/containerd/containerd.service`,
//! `containerd-config-toml_k8s_containerd_sock`, @a10182f9). The listener of the kubelet's CRI
//! socket is found as `ss -xlp` finds it: the listening socket's inode in `/proc/PID/net/unix`
//! (flag `__SO_ACCEPTCON`, `00010000`; the path as the listener bound it, in its own mount
//! namespace: linux `net/unix/af_unix.c` `unix_seq_show`), then the process whose
//! `/proc/PID/fd/*` links to `socket:[INODE]`. The parsers are pure; [`socket_listeners`] reads.

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
        RunningProcess::of_pid(proc, pid)
    }

    /// `pid`'s command line and environment; `None` when it is no process.
    pub fn of_pid(proc: &Path, pid: u32) -> Option<RunningProcess> {
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
        self.flag_values(name).pop()
    }

    /// Every value a repeated flag was given, in order (`--kubelet-arg A --kubelet-arg=B`).
    pub fn flag_values(&self, name: &str) -> Vec<String> {
        let mut found = Vec::new();
        let mut args = self.args.iter().skip(1);
        while let Some(arg) = args.next() {
            let Some(bare) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
                continue;
            };
            if let Some(value) = bare.strip_prefix(name).and_then(|v| v.strip_prefix('=')) {
                found.push(value.to_string());
            } else if bare == name {
                found.extend(args.next().cloned());
            }
        }
        found
    }
}

/// The lowest pid under `proc` whose process is named `comm` (`containerd`, `kubelet`).
pub fn process_named(proc: &Path, comm: &str) -> Option<u32> {
    pids(proc).into_iter().find(|pid| {
        std::fs::read_to_string(proc.join(pid.to_string()).join("comm"))
            .is_ok_and(|name| name.trim() == comm)
    })
}

/// Every pid under `proc`, lowest first.
pub fn pids(proc: &Path) -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir(proc)
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

/// `__SO_ACCEPTCON`: the flag `/proc/net/unix` shows on a listening socket.
const ACCEPTING: u32 = 0x0001_0000;

/// The listening unix sockets of a `/proc/PID/net/unix` text: (inode, path as bound). Unnamed
/// and abstract (`@`) sockets have no node path and are left out, as are lines not of the
/// kernel's form.
pub fn unix_listeners(net_unix: &str) -> Vec<(u64, String)> {
    net_unix
        .lines()
        .skip(1)
        .filter_map(|line| {
            // `%pK: %08X %08X %08X %04X %02X %5lu` then ` PATH`; the path may hold spaces.
            let mut rest = line;
            let mut fields = Vec::with_capacity(7);
            for _ in 0..7 {
                rest = rest.trim_start_matches(' ');
                let end = rest.find(' ').unwrap_or(rest.len());
                fields.push(&rest[..end]);
                rest = &rest[end..];
            }
            let flags = u32::from_str_radix(fields[3], 16).ok()?;
            let inode = fields[6].parse().ok()?;
            let path = rest.strip_prefix(' ')?;
            (flags & ACCEPTING != 0 && path.starts_with('/')).then(|| (inode, path.to_string()))
        })
        .collect()
}

/// The pids holding any of `inodes` open, lowest first, from each process's fd link targets
/// (`socket:[INODE]`).
pub fn socket_holders(inodes: &[u64], fds: &[(u32, Vec<String>)]) -> Vec<u32> {
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let mut holders: Vec<u32> = fds
        .iter()
        .filter(|(_, links)| links.iter().any(|l| wanted.contains(l)))
        .map(|(pid, _)| *pid)
        .collect();
    holders.sort_unstable();
    holders.dedup();
    holders
}

/// Of the processes holding a listening socket, the one that serves it: the only one, or, when
/// systemd holds it too (socket activation, pid 1), the other; several left: the lowest, with
/// the others named.
pub fn serving_holder(holders: &[u32]) -> Option<(u32, Vec<u32>)> {
    let servers: Vec<u32> = match holders {
        [1, rest @ ..] if !rest.is_empty() => rest.to_vec(),
        all => all.to_vec(),
    };
    let (first, others) = servers.split_first()?;
    Some((*first, others.to_vec()))
}

/// Why the listener of a socket was not found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListenerProblem {
    #[error("{table} cannot be read ({reason})")]
    NoTable { table: String, reason: String },
    #[error("no socket listens on {socket} in {table}")]
    NotListening { socket: String, table: String },
    #[error(
        "no process's file descriptors hold the socket listening on {socket} (inode {inodes}): reading another process's fds needs CAP_SYS_PTRACE, and its pid namespace (hostPID)"
    )]
    NoHolder { socket: String, inodes: String },
}

/// The processes holding a socket listening at `socket` (as the listener bound it), seen in
/// the network namespace of `netns_pid` (the kubelet's; `None`: this process's own), lowest
/// first. `same` says whether a listener's path is `socket` (a path spelled another way,
/// `/var/run` for `/run`, is the same socket). Paths are as each listener's mount namespace
/// shows them, so a container binding the same path in its own holds one too: the caller
/// tells them apart by the file each sees.
pub fn socket_listeners(
    proc: &Path,
    netns_pid: Option<u32>,
    socket: &str,
    same: &dyn Fn(&str) -> bool,
) -> Result<Vec<u32>, ListenerProblem> {
    let table = proc
        .join(netns_pid.map_or("self".to_string(), |p| p.to_string()))
        .join("net/unix");
    let shown = table.display().to_string();
    let text = std::fs::read_to_string(&table).map_err(|e| ListenerProblem::NoTable {
        table: shown.clone(),
        reason: e.to_string(),
    })?;
    let inodes: Vec<u64> = unix_listeners(&text)
        .into_iter()
        .filter(|(_, path)| path == socket || same(path))
        .map(|(inode, _)| inode)
        .collect();
    if inodes.is_empty() {
        return Err(ListenerProblem::NotListening {
            socket: socket.into(),
            table: shown,
        });
    }
    let fds: Vec<(u32, Vec<String>)> = pids(proc)
        .into_iter()
        .map(|pid| (pid, fd_links(&proc.join(pid.to_string()).join("fd"))))
        .collect();
    let holders = socket_holders(&inodes, &fds);
    match holders.is_empty() {
        true => Err(ListenerProblem::NoHolder {
            socket: socket.into(),
            inodes: inodes
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        }),
        false => Ok(holders),
    }
}

/// The targets of the links in a `/proc/PID/fd` directory (none when it cannot be read).
fn fd_links(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .map(|target| target.to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bottlerocket as `/proc/net/unix` shows it: host-containerd's socket first, then the
    /// Kubernetes containerd's, a connected socket, an abstract one, and a path with a space.
    const NET_UNIX: &str = "Num       RefCount Protocol Flags    Type St Inode Path
ffff8880045e4400: 00000002 00000000 00010000 0001 01 18211 /run/host-containerd/containerd.sock
ffff8880045e4c00: 00000002 00000000 00010000 0001 01 18212 /run/host-containerd/containerd.sock.ttrpc
ffff888004a2d000: 00000002 00000000 00010000 0001 01 21577 /run/containerd/containerd.sock
ffff888004a2d800: 00000003 00000000 00000000 0001 03 21590 /run/containerd/containerd.sock
ffff888004a2e000: 00000002 00000000 00010000 0001 01  1354 @/containerd-shim/abc.sock@
ffff888004a2e800: 00000002 00000000 00010000 0001 01 31000 /run/odd dir/x.sock
ffff888004a2f000: 00000003 00000000 00000000 0001 03  2608836
not a line of the kernel's
";

    #[test]
    fn listening_named_sockets_only() {
        assert_eq!(
            unix_listeners(NET_UNIX),
            vec![
                (18211, "/run/host-containerd/containerd.sock".to_string()),
                (
                    18212,
                    "/run/host-containerd/containerd.sock.ttrpc".to_string()
                ),
                (21577, "/run/containerd/containerd.sock".to_string()),
                (31000, "/run/odd dir/x.sock".to_string()),
            ]
        );
        assert!(unix_listeners("").is_empty());
    }

    #[test]
    fn the_holder_of_the_listening_inode_not_the_lowest_pid() {
        let links = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // host-containerd (pid 812) holds its own socket; the Kubernetes containerd (pid 1204)
        // the kubelet's; the kubelet (pid 1330) a connected socket, not the listener.
        let fds = vec![
            (1, links(&["/dev/null", "socket:[900]"])),
            (812, links(&["socket:[18211]", "socket:[18212]"])),
            (1204, links(&["/dev/null", "socket:[21577]", "pipe:[4]"])),
            (1330, links(&["socket:[21590]"])),
        ];
        let inodes: Vec<u64> = unix_listeners(NET_UNIX)
            .into_iter()
            .filter(|(_, p)| p == "/run/containerd/containerd.sock")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(socket_holders(&inodes, &fds), vec![1204]);
        assert_eq!(socket_holders(&[5], &fds), Vec::<u32>::new());
        // Socket activation: systemd holds it too; the service serves it.
        assert_eq!(serving_holder(&[1, 1204]), Some((1204, vec![])));
        assert_eq!(serving_holder(&[1]), Some((1, vec![])));
        assert_eq!(serving_holder(&[700, 1204]), Some((700, vec![1204])));
        assert_eq!(serving_holder(&[]), None);
    }

    #[test]
    fn the_reader_finds_a_real_listener_in_this_process() {
        let dir = std::env::temp_dir().join(format!("pullpath-listener-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let socket = dir.join("cri.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
        let shown = socket.display().to_string();
        let found = socket_listeners(Path::new("/proc"), None, &shown, &|_| false);
        assert_eq!(found, Ok(vec![std::process::id()]));
        let missing = socket_listeners(Path::new("/proc"), None, "/nonexistent.sock", &|_| false);
        assert!(
            matches!(missing, Err(ListenerProblem::NotListening { .. })),
            "{missing:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
