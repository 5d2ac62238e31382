//! The node's filesystem, read as the node's own processes read it.
//!
//! On the node, a node path is just a path. In a probe pod the node's root filesystem is mounted
//! read-only at some directory (`--host-root /host`), and a node path such as `/etc/resolv.conf`
//! must be looked up inside it — *including the symlinks on the way*: AKS Ubuntu's
//! `/etc/resolv.conf` links to `/run/systemd/resolve/resolv.conf`, Azure Linux's
//! `/etc/ssl/certs` to `/etc/pki/tls/certs`. A plain `open("/host/etc/resolv.conf")` would follow
//! those absolute links into the *pod's* filesystem and read the pod's files (or nothing), which
//! is how a probe pod reports failures the node does not have.
//!
//! [`NodeRoot`] is the one place a node path becomes a path this process can open. It resolves
//! component by component as the kernel's `openat2(RESOLVE_IN_ROOT)` does: an absolute link
//! starts again at the node root, `..` never climbs above it, and a chain of more than
//! [`MAX_LINKS`] links fails as `ELOOP` does. Every reader of node files goes through it; error
//! messages and reports name the node path, never the mount point.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Linux follows at most 40 links while resolving one path (`MAXSYMLINKS`).
pub const MAX_LINKS: usize = 40;

/// Where the node's `/` is, as this process sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRoot {
    /// `/` on the node itself.
    mount: PathBuf,
}

impl Default for NodeRoot {
    fn default() -> NodeRoot {
        NodeRoot::host()
    }
}

impl NodeRoot {
    /// This machine is the node: node paths are this process's paths.
    pub fn host() -> NodeRoot {
        NodeRoot { mount: "/".into() }
    }

    /// The node's root filesystem is mounted at `mount` (e.g. `/host` in a probe pod).
    pub fn at(mount: impl Into<PathBuf>) -> NodeRoot {
        NodeRoot {
            mount: mount.into(),
        }
    }

    /// Where the node's `/` is mounted.
    pub fn mount(&self) -> &Path {
        &self.mount
    }

    /// Whether node paths are this process's own paths.
    pub fn is_host(&self) -> bool {
        self.mount == Path::new("/")
    }

    /// The path this process opens for `node_path`, every symlink on the way resolved inside the
    /// node root. A relative `node_path` is taken from the node's `/`. A missing component ends
    /// the resolution: the rest is appended as written, so opening the result fails with
    /// `NotFound` as opening the node path on the node would.
    pub fn resolve(&self, node_path: &Path) -> io::Result<PathBuf> {
        if self.is_host() {
            // The kernel resolves inside the real root already.
            return Ok(Path::new("/").join(node_path));
        }
        let mut pending: Vec<OsString> = components(node_path);
        pending.reverse();
        let mut resolved: Vec<OsString> = Vec::new();
        let mut links = 0;
        while let Some(name) = pending.pop() {
            if name == ".." {
                resolved.pop();
                continue;
            }
            let candidate = self.join(&resolved).join(&name);
            let target = match std::fs::symlink_metadata(&candidate) {
                Ok(meta) if meta.file_type().is_symlink() => std::fs::read_link(&candidate)?,
                Ok(_) => {
                    resolved.push(name);
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    resolved.push(name);
                    resolved.extend(pending.drain(..).rev());
                    break;
                }
                Err(e) => return Err(e),
            };
            links += 1;
            if links > MAX_LINKS {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{}: more than {MAX_LINKS} symbolic links on the way (ELOOP)",
                        node_path.display()
                    ),
                ));
            }
            if target.is_absolute() {
                resolved.clear();
            }
            pending.extend(components(&target).into_iter().rev());
        }
        Ok(self.join(&resolved))
    }

    /// `std::fs::read` of a node path.
    pub fn read(&self, node_path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(self.resolve(node_path)?)
    }

    /// `std::fs::read_to_string` of a node path.
    pub fn read_to_string(&self, node_path: &Path) -> io::Result<String> {
        std::fs::read_to_string(self.resolve(node_path)?)
    }

    /// The entries of a node directory, as node paths (`dir/name`), sorted by name.
    pub fn read_dir(&self, node_dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut names: Vec<OsString> = std::fs::read_dir(self.resolve(node_dir)?)?
            .map(|entry| entry.map(|e| e.file_name()))
            .collect::<io::Result<_>>()?;
        names.sort();
        Ok(names.into_iter().map(|name| node_dir.join(name)).collect())
    }

    /// `std::fs::read_link` of a node path's last component (the links before it resolved).
    pub fn read_link(&self, node_path: &Path) -> io::Result<PathBuf> {
        let parent = node_path.parent().unwrap_or(Path::new("/"));
        let name = node_path.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "a path without a file name")
        })?;
        std::fs::read_link(self.resolve(parent)?.join(name))
    }

    /// `std::fs::metadata` (links followed inside the root).
    pub fn metadata(&self, node_path: &Path) -> io::Result<std::fs::Metadata> {
        std::fs::metadata(self.resolve(node_path)?)
    }

    /// Whether the node path is a regular file (links followed inside the root).
    pub fn is_file(&self, node_path: &Path) -> bool {
        self.metadata(node_path).is_ok_and(|m| m.is_file())
    }

    /// Whether the node path is a directory (links followed inside the root).
    pub fn is_dir(&self, node_path: &Path) -> bool {
        self.metadata(node_path).is_ok_and(|m| m.is_dir())
    }

    fn join(&self, resolved: &[OsString]) -> PathBuf {
        let mut path = self.mount.clone();
        path.extend(resolved);
        path
    }
}

/// The names of a path, `.` and the root dropped, `..` kept for the resolver to apply.
fn components(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// A node root in a fresh temporary directory, removed on drop.
    struct Root(PathBuf);

    impl Root {
        fn new(name: &str) -> Root {
            let dir = std::env::temp_dir()
                .join(format!("pullpath-node-root-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("temp dir");
            Root(dir)
        }
        fn file(&self, node_path: &str, text: &str) {
            let at = self.0.join(node_path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
            std::fs::write(at, text).expect("write");
        }
        fn link(&self, node_path: &str, target: &str) {
            let at = self.0.join(node_path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
            symlink(target, at).expect("symlink");
        }
        fn node(&self) -> NodeRoot {
            NodeRoot::at(&self.0)
        }
    }

    impl Drop for Root {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn an_absolute_link_is_followed_inside_the_node_root() {
        // AKS Ubuntu: /etc/resolv.conf → /run/systemd/resolve/resolv.conf.
        let root = Root::new("absolute");
        root.file("/run/systemd/resolve/resolv.conf", "nameserver 10.0.0.10\n");
        root.link("/etc/resolv.conf", "/run/systemd/resolve/resolv.conf");
        let text = root
            .node()
            .read_to_string(Path::new("/etc/resolv.conf"))
            .expect("read through the link");
        assert_eq!(text, "nameserver 10.0.0.10\n");
        assert_eq!(
            root.node()
                .resolve(Path::new("/etc/resolv.conf"))
                .expect("resolves"),
            root.0.join("run/systemd/resolve/resolv.conf")
        );
    }

    #[test]
    fn a_directory_link_in_the_middle_of_a_path() {
        // Azure Linux: /etc/ssl/certs → /etc/pki/tls/certs, a bundle inside it.
        let root = Root::new("middle");
        root.file("/etc/pki/tls/certs/ca-bundle.crt", "PEM");
        root.link("/etc/pki/tls/certs/ca-certificates.crt", "ca-bundle.crt");
        root.link("/etc/ssl/certs", "/etc/pki/tls/certs");
        let text = root
            .node()
            .read_to_string(Path::new("/etc/ssl/certs/ca-certificates.crt"))
            .expect("both links resolved in the root");
        assert_eq!(text, "PEM");
    }

    #[test]
    fn relative_links_and_dot_dot_never_leave_the_root() {
        // Bottlerocket: /etc/ssl/certs → ../pki/tls/certs; a hostile link climbs past `/`.
        let root = Root::new("relative");
        root.file("/etc/pki/tls/certs/ca-bundle.crt", "PEM");
        root.link("/etc/ssl/certs", "../pki/tls/certs");
        root.link("/etc/escape", "../../../../../../etc/pki");
        let node = root.node();
        assert_eq!(
            node.read_to_string(Path::new("/etc/ssl/certs/ca-bundle.crt"))
                .expect("relative link"),
            "PEM"
        );
        assert_eq!(
            node.resolve(Path::new("/etc/escape")).expect("resolves"),
            root.0.join("etc/pki"),
            "`..` stops at the node's `/`"
        );
        assert_eq!(
            node.resolve(Path::new("/../../etc/./pki/tls/../tls/certs"))
                .expect("resolves"),
            root.0.join("etc/pki/tls/certs")
        );
    }

    #[test]
    fn a_missing_component_fails_as_on_the_node() {
        let root = Root::new("missing");
        root.link("/etc/resolv.conf", "/run/systemd/resolve/resolv.conf");
        let err = root
            .node()
            .read(Path::new("/etc/resolv.conf"))
            .expect_err("the target does not exist in the node root");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(!root.node().is_file(Path::new("/etc/resolv.conf")));
    }

    #[test]
    fn a_link_loop_ends_with_eloop() {
        let root = Root::new("loop");
        root.link("/etc/a", "/etc/b");
        root.link("/etc/b", "a");
        let err = root
            .node()
            .resolve(Path::new("/etc/a/x"))
            .expect_err("a loop is refused");
        assert!(err.to_string().contains("ELOOP"), "{err}");
    }

    #[test]
    fn directory_entries_are_node_paths() {
        let root = Root::new("dir");
        root.file("/etc/pki/tls/certs/b.pem", "b");
        root.file("/etc/pki/tls/certs/a.pem", "a");
        root.link("/etc/ssl/certs", "/etc/pki/tls/certs");
        let entries = root
            .node()
            .read_dir(Path::new("/etc/ssl/certs"))
            .expect("listed through the link");
        assert_eq!(
            entries,
            vec![
                PathBuf::from("/etc/ssl/certs/a.pem"),
                PathBuf::from("/etc/ssl/certs/b.pem")
            ]
        );
    }

    #[test]
    fn on_the_node_itself_paths_are_unchanged() {
        let node = NodeRoot::host();
        assert!(node.is_host());
        assert_eq!(
            node.resolve(Path::new("/etc/hosts")).expect("identity"),
            PathBuf::from("/etc/hosts")
        );
    }
}
