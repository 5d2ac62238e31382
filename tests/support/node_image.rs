//! Node roots laid out as node images lay them out (`../shared/notes/nodes.md`): the files a
//! probe pod reads at /host, at their node paths, with the images' absolute links, so that a
//! node path read in the probe's own filesystem instead gives another answer.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A node's `/` in a directory of this machine.
#[derive(Debug, Clone)]
pub struct NodeTree {
    pub root: PathBuf,
}

impl NodeTree {
    pub fn at_root(root: &Path) -> NodeTree {
        NodeTree {
            root: root.to_path_buf(),
        }
    }

    /// Where node path `node_path` is, creating its parent (never following a node link).
    pub fn at(&self, node_path: &str) -> PathBuf {
        let at = self.root.join(node_path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().expect("parent")).expect("node dirs");
        at
    }

    pub fn file(&self, node_path: &str, text: &str, mode: u32) {
        let at = self.at(node_path);
        std::fs::write(&at, text).expect("node file");
        std::fs::set_permissions(&at, std::fs::Permissions::from_mode(mode)).expect("mode");
    }

    pub fn link(&self, node_path: &str, target: &str) {
        symlink(target, self.at(node_path)).expect("node link");
    }

    /// A program of this machine with the shared libraries it needs, at the same node paths
    /// (the node's own /bin/sh and libc, as a plugin script finds them on a node).
    pub fn install(&self, program: &str, node_path: &str) {
        std::fs::copy(program, self.at(node_path)).expect("copy the program");
        let ldd = Command::new("ldd").arg(program).output().expect("ldd runs");
        for line in String::from_utf8_lossy(&ldd.stdout).lines() {
            let library = line
                .split_whitespace()
                .find(|word| word.starts_with('/'))
                .map(str::to_string);
            if let Some(library) = library {
                let _ = std::fs::copy(&library, self.at(&library));
            }
        }
    }
}

/// Azure Linux's trust store: the CA in the extracted bundle, reached through absolute links
/// (`/etc/ssl/certs` → `/etc/pki/tls/certs`, `ca-bundle.crt` → the extracted bundle).
pub fn azure_linux_trust(node: &NodeTree, ca_pem: &str) {
    node.file(
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
        ca_pem,
        0o644,
    );
    node.link(
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    );
    node.link("/etc/ssl/certs", "/etc/pki/tls/certs");
}

/// AKS Ubuntu's resolver: `/etc/resolv.conf` → `/run/systemd/resolve/resolv.conf` (the upstream
/// servers, which the kubelet's `--resolv-conf` names too), and the hosts file.
pub fn aks_resolver(node: &NodeTree, resolv_conf: &str, hosts: &str) {
    node.file("/run/systemd/resolve/resolv.conf", resolv_conf, 0o644);
    node.link("/etc/resolv.conf", "/run/systemd/resolve/resolv.conf");
    node.file("/etc/hosts", hosts, 0o644);
}

/// Where AKS's kubelet finds its credential provider (AgentBaker's `KUBELET_FLAGS`).
pub const AKS_PROVIDER_CONFIG: &str = "/var/lib/kubelet/credential-provider-config.yaml";
pub const AKS_PROVIDER_BIN_DIR: &str = "/var/lib/kubelet/credential-provider";

/// AKS's credential provider: `acr-credential-provider`, a plugin reading the root-only
/// `/etc/kubernetes/azure.json` it is given by absolute path and answering the exec protocol
/// with the identity it holds there, for images matching `image_match` (also its answer's key).
pub fn aks_credential_provider(node: &NodeTree, image_match: &str, client_id: &str, secret: &str) {
    node.install("/bin/dash", "/bin/sh");
    node.file(
        "/etc/kubernetes/azure.json",
        &format!(
            "{{\n  \"aadClientId\": \"{client_id}\",\n  \"aadClientSecret\": \"{secret}\"\n}}\n"
        ),
        0o600,
    );
    // Only shell builtins: the node has /bin/sh and nothing else.
    let plugin = format!(
        r#"#!/bin/sh
while IFS= read -r line; do
  case "$line" in
    *aadClientId*) id=${{line#*: \"}}; id=${{id%%\"*}} ;;
    *aadClientSecret*) secret=${{line#*: \"}}; secret=${{secret%%\"*}} ;;
  esac
done < "$1"
[ -n "$secret" ] || {{ echo "cannot read $1" >&2; exit 1; }}
printf '{{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","auth":{{"{image_match}":{{"username":"%s","password":"%s"}}}}}}' "$id" "$secret"
"#
    );
    node.file(
        &format!("{AKS_PROVIDER_BIN_DIR}/acr-credential-provider"),
        &plugin,
        0o755,
    );
    node.file(
        AKS_PROVIDER_CONFIG,
        &format!(
            "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: acr-credential-provider\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    defaultCacheDuration: 10m\n    matchImages:\n      - \"{image_match}\"\n    args:\n      - /etc/kubernetes/azure.json\n"
        ),
        0o644,
    );
}
