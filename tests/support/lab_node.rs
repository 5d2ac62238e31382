//! A lab node's root filesystem, laid out as a node's `/` for the probe pod's hostPath.

use std::path::{Path, PathBuf};

use super::LabGuard;

/// The node's root filesystem as its probe pod mounts it at /host: a directory laid out like a
/// node's `/`, holding that lab node's own files at their node paths — its resolver and hosts
/// (its namespace's), containerd's config.toml where its `--config` names it (its `config_path` and the CA
/// its hosts.toml name, at the absolute paths they give), its CRI socket at
/// /run/containerd/containerd.sock, the kubelet's config.json in the kubelet's default root dir,
/// the machine's trust bundle. Files are hard links (the socket too: a unix socket is its inode),
/// so the directory lives beside the lab's state, on its filesystem. Nothing links out of the
/// root: the probe resolves every link inside it, as a node's root is read in a probe pod.
pub fn node_root(lab: &LabGuard, base: &Path, namespace: &str, containerd: &str) -> PathBuf {
    // The node's containerd socket lies under it, and a unix socket's path has 108 bytes at
    // most: the root is named by the lab namespace, not the longer node name.
    let root = base.join(namespace);
    let state = &lab.status.state;
    let ns = &lab.status.namespaces[namespace];
    let place = |source: &Path, at: &Path| {
        let at = root.join(at.strip_prefix("/").unwrap_or(at));
        std::fs::create_dir_all(at.parent().expect("parent")).expect("node dir");
        if std::fs::hard_link(source, &at).is_err() {
            std::fs::copy(source, &at)
                .unwrap_or_else(|e| panic!("{} into the node root: {e}", source.display()));
        }
    };
    let tree = |dir: &Path| {
        let mut pending = vec![dir.to_path_buf()];
        while let Some(next) = pending.pop() {
            for entry in std::fs::read_dir(&next).expect("lab directory").flatten() {
                let path = entry.path();
                match entry.file_type() {
                    Ok(t) if t.is_dir() => pending.push(path),
                    Ok(t) if t.is_file() => place(&path, &path),
                    _ => {}
                }
            }
        }
    };
    place(
        &PathBuf::from(format!("/etc/netns/{ns}/resolv.conf")),
        Path::new("/etc/resolv.conf"),
    );
    place(
        &PathBuf::from(format!("/etc/netns/{ns}/hosts")),
        Path::new("/etc/hosts"),
    );
    let containerd_dir = state.join("containerd").join(containerd);
    // At the path the lab's containerd was started with (`--config`), where the probe reads it.
    place(
        &containerd_dir.join("config.toml"),
        &containerd_dir.join("config.toml"),
    );
    tree(&containerd_dir.join("certs.d"));
    tree(&state.join("pki"));
    place(
        lab.socket(containerd),
        Path::new("/run/containerd/containerd.sock"),
    );
    place(
        &lab.status.kubelet.join("root").join("config.json"),
        Path::new("/var/lib/kubelet/config.json"),
    );
    place(
        Path::new("/etc/ssl/certs/ca-certificates.crt"),
        Path::new("/etc/ssl/certs/ca-certificates.crt"),
    );
    root
}
