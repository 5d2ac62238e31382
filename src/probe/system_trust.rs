//! The system trust store as the runtime loads it.
//!
//! containerd is a Go program, so on Linux it trusts what Go's `crypto/x509` loads
//! (`root_linux.go`, `root_unix.go` `loadSystemRoots`): the *first readable* file of a fixed
//! list of bundles, then *every* file of a list of directories (symlinks whose target has no `/`
//! — `c_rehash`'s hash links to a file beside them — skipped as duplicates), the file list
//! replaced by `SSL_CERT_FILE` and the directory list by `SSL_CERT_DIR` (`:`-separated) when the
//! runtime's environment sets them. A PEM dropped straight into `/etc/ssl/certs` is therefore
//! trusted even if `update-ca-certificates` never ran. Every path is a node path, read through
//! the node root, so `/etc/ssl/certs` → `/etc/pki/tls/certs` (Azure Linux) resolves on the node.
//!
//! Go caches the pool once per process: a CA added after containerd started is not trusted
//! until it restarts. That cannot be seen from files alone and is not claimed here.

use std::path::PathBuf;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::node_root::NodeRoot;

/// Go's bundle files on Linux, first readable one wins (`root_linux.go` `certFiles`).
pub const GO_CERT_FILES: [&str; 6] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/tls/cacert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// Go's directories on Linux, every one read (`root_linux.go` `certDirectories`).
pub const GO_CERT_DIRS: [&str; 2] = ["/etc/ssl/certs", "/etc/pki/tls/certs"];

/// Where the lists came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListOrigin {
    /// Go's built-in list.
    GoDefault,
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR` in the runtime's environment, and where that was set.
    Environment { var: &'static str, source: String },
}

/// What was read, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemTrustEvidence {
    /// The bundle file Go would read (node path), if any was readable.
    pub file: Option<PathBuf>,
    pub files_from: ListOrigin,
    /// The directories read, each with the certificates found in its files.
    pub dirs: Vec<(PathBuf, usize)>,
    pub dirs_from: ListOrigin,
    /// Certificates in the pool, duplicates included (as Go's count would).
    pub certificates: usize,
}

/// The runtime's system roots and what they came from.
#[derive(Debug, Clone)]
pub struct SystemTrust {
    pub certs: Vec<CertificateDer<'static>>,
    /// `None` off Linux, where the platform's own store is used.
    pub evidence: Option<SystemTrustEvidence>,
}

/// The runtime's `SSL_CERT_FILE` or `SSL_CERT_DIR`: its value and where it was set.
pub type TrustVar<'a> = Option<(&'a str, &'a str)>;

impl SystemTrust {
    /// Go's system roots on Linux, read inside the node root, with the runtime's
    /// `SSL_CERT_FILE` and `SSL_CERT_DIR` (value, where set) when it has them.
    pub fn load(node: &NodeRoot, cert_file: TrustVar, cert_dir: TrustVar) -> SystemTrust {
        if !cfg!(target_os = "linux") {
            return SystemTrust {
                certs: rustls_native_certs::load_native_certs().certs,
                evidence: None,
            };
        }
        load_as_go(node, cert_file, cert_dir)
    }
}

fn load_as_go(node: &NodeRoot, cert_file: TrustVar, cert_dir: TrustVar) -> SystemTrust {
    let origin = |var: &'static str, found: TrustVar| match found {
        Some((_, source)) => ListOrigin::Environment {
            var,
            source: source.to_string(),
        },
        None => ListOrigin::GoDefault,
    };
    let files: Vec<PathBuf> = match cert_file.filter(|(v, _)| !v.is_empty()) {
        Some((value, _)) => vec![PathBuf::from(value)],
        None => GO_CERT_FILES.iter().map(PathBuf::from).collect(),
    };
    let dirs: Vec<PathBuf> = match cert_dir.filter(|(v, _)| !v.is_empty()) {
        Some((value, _)) => value.split(':').map(PathBuf::from).collect(),
        None => GO_CERT_DIRS.iter().map(PathBuf::from).collect(),
    };
    let mut certs = Vec::new();
    let mut file_read = None;
    for file in files {
        if let Ok(pem) = node.read(&file) {
            certs.extend(pem_certificates(&pem));
            file_read = Some(file);
            break;
        }
    }
    let mut dirs_read = Vec::new();
    for dir in dirs {
        let Ok(entries) = node.read_dir(&dir) else {
            continue;
        };
        let before = certs.len();
        for entry in entries {
            if is_same_dir_link(node, &entry) {
                continue;
            }
            if let Ok(pem) = node.read(&entry) {
                certs.extend(pem_certificates(&pem));
            }
        }
        dirs_read.push((dir, certs.len() - before));
    }
    let evidence = SystemTrustEvidence {
        file: file_read,
        files_from: origin("SSL_CERT_FILE", cert_file.filter(|(v, _)| !v.is_empty())),
        dirs: dirs_read,
        dirs_from: origin("SSL_CERT_DIR", cert_dir.filter(|(v, _)| !v.is_empty())),
        certificates: certs.len(),
    };
    SystemTrust {
        certs,
        evidence: Some(evidence),
    }
}

/// A symlink whose target has no `/`: a hash link to a file in the same directory, which Go
/// skips so that each certificate is read once (`isSameDirSymlink`).
fn is_same_dir_link(node: &NodeRoot, entry: &std::path::Path) -> bool {
    node.read_link(entry)
        .is_ok_and(|target| !target.as_os_str().as_encoded_bytes().contains(&b'/'))
}

/// Every `CERTIFICATE` block of a PEM file (others, and broken ones, skipped as Go's
/// `AppendCertsFromPEM` skips them).
pub fn pem_certificates(pem: &[u8]) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::path::Path;

    use super::*;

    /// A self-signed certificate in PEM.
    fn ca(name: &str) -> String {
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec![name.to_string()]).expect("params");
        params.self_signed(&key).expect("self-signed").pem()
    }

    struct Root(PathBuf);

    impl Root {
        fn new(name: &str) -> Root {
            let dir =
                std::env::temp_dir().join(format!("pullpath-trust-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("dir");
            Root(dir)
        }
        fn at(&self, node_path: &str) -> PathBuf {
            let at = self.0.join(node_path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
            at
        }
        fn file(&self, node_path: &str, text: &str) {
            std::fs::write(self.at(node_path), text).expect("write");
        }
        fn link(&self, node_path: &str, target: &str) {
            symlink(target, self.at(node_path)).expect("link");
        }
        fn trust(&self, file: TrustVar, dir: TrustVar) -> SystemTrust {
            SystemTrust::load(&NodeRoot::at(&self.0), file, dir)
        }
    }

    impl Drop for Root {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn evidence(trust: &SystemTrust) -> &SystemTrustEvidence {
        trust.evidence.as_ref().expect("Linux")
    }

    #[test]
    fn the_first_readable_bundle_then_every_directory() {
        let root = Root::new("order");
        // Both bundles exist: only the first of Go's list is read.
        root.file("/etc/ssl/certs/ca-certificates.crt", &ca("debian"));
        root.file(
            "/etc/pki/tls/certs/ca-bundle.crt",
            &format!("{}{}", ca("rhel-a"), ca("rhel-b")),
        );
        let trust = root.trust(None, None);
        let seen = evidence(&trust);
        assert_eq!(
            seen.file.as_deref(),
            Some(Path::new("/etc/ssl/certs/ca-certificates.crt"))
        );
        // The directories are read in full too: the bundle again (1) and the RHEL one (2).
        assert_eq!(
            seen.dirs,
            [
                (PathBuf::from("/etc/ssl/certs"), 1),
                (PathBuf::from("/etc/pki/tls/certs"), 2)
            ]
        );
        assert_eq!(trust.certs.len(), 4);
        assert_eq!(seen.files_from, ListOrigin::GoDefault);
    }

    #[test]
    fn azure_linux_links_resolve_on_the_node() {
        // /etc/ssl/certs → /etc/pki/tls/certs, ca-certificates.crt → the extracted bundle.
        let root = Root::new("azl");
        root.file(
            "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
            &ca("private-ca"),
        );
        root.link(
            "/etc/pki/tls/certs/ca-bundle.crt",
            "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
        );
        root.link("/etc/ssl/certs", "/etc/pki/tls/certs");
        root.link(
            "/etc/pki/tls/certs/ca-certificates.crt",
            "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
        );
        let trust = root.trust(None, None);
        assert_eq!(
            evidence(&trust).file.as_deref(),
            Some(Path::new("/etc/ssl/certs/ca-certificates.crt"))
        );
        assert!(!trust.certs.is_empty());
    }

    #[test]
    fn hash_links_in_the_same_directory_are_skipped() {
        let root = Root::new("hash");
        root.file("/etc/ssl/certs/private.pem", &ca("dropped-in"));
        root.link("/etc/ssl/certs/0a1b2c3d.0", "private.pem");
        let trust = root.trust(None, None);
        // No bundle file; the directory's one certificate counted once.
        assert_eq!(evidence(&trust).file, None);
        assert_eq!(
            evidence(&trust).dirs,
            [(PathBuf::from("/etc/ssl/certs"), 1)]
        );
    }

    #[test]
    fn the_runtimes_environment_replaces_the_lists() {
        let root = Root::new("env");
        root.file("/etc/ssl/certs/ca-certificates.crt", &ca("system"));
        root.file("/opt/pki/bundle.pem", &ca("only-this"));
        root.file("/opt/pki/dir/one.pem", &ca("dir-one"));
        let trust = root.trust(
            Some(("/opt/pki/bundle.pem", "/etc/default/containerd")),
            Some(("/opt/pki/missing:/opt/pki/dir", "/etc/default/containerd")),
        );
        let seen = evidence(&trust);
        assert_eq!(seen.file.as_deref(), Some(Path::new("/opt/pki/bundle.pem")));
        assert_eq!(seen.dirs, [(PathBuf::from("/opt/pki/dir"), 1)]);
        assert_eq!(trust.certs.len(), 2, "the system bundle is not read");
        assert_eq!(
            seen.files_from,
            ListOrigin::Environment {
                var: "SSL_CERT_FILE",
                source: "/etc/default/containerd".into()
            }
        );
    }
}
