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

/// Bottlerocket (aws-k8s) as its sources lay it out (bottlerocket-core-kit @a10182f9): two
/// containerds, both `/usr/bin/containerd`. `host-containerd` starts first (before
/// `configured.target`) with `--config /etc/host-containerd/config.toml`, no CRI plugin, on
/// `/run/host-containerd/containerd.sock` (`packages/host-ctr/host-containerd.service`,
/// `host-containerd-config.toml`); the Kubernetes containerd with no flag, so
/// `/etc/containerd/config.toml` (a tmpfs, `etc-containerd.mount`), rendered from settings with
/// the registry's credential in `registry.configs."HOST".auth` and no hosts directory
/// (`packages/containerd/containerd-config-toml_k8s_containerd_sock`). The kubelet's flags from
/// `packages/kubernetes-1.31/kubelet-exec-start-conf`; trust in `/etc/pki/tls/certs/ca-bundle.crt`
/// behind the relative link `/etc/ssl/certs` → `../pki/tls/certs` (../shared/notes/nodes.md §3).
pub mod bottlerocket {
    use super::NodeTree;

    pub const KUBELET: &[&str] = &[
        "/usr/bin/kubelet",
        "--cloud-provider",
        "external",
        "--kubeconfig",
        "/etc/kubernetes/kubelet/kubeconfig",
        "--config",
        "/etc/kubernetes/kubelet/config",
        "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
        "--containerd=/run/containerd/containerd.sock",
        "--root-dir",
        "/var/lib/kubelet",
        "--cert-dir",
        "/var/lib/kubelet/pki",
        "--image-credential-provider-bin-dir",
        "/usr/libexec/kubernetes/kubelet/plugins",
        "--image-credential-provider-config",
        "/etc/kubernetes/kubelet/credential-provider-config.yaml",
        "--pod-infra-container-image",
        "localhost/kubernetes/pause:0.1.0",
        "--runtime-cgroups=/runtime.slice/containerd.service",
    ];
    /// host-containerd's command line and socket.
    pub const HOST_CONTAINERD: &[&str] = &[
        "/usr/bin/containerd",
        "--config",
        "/etc/host-containerd/config.toml",
    ];
    pub const HOST_CONTAINERD_SOCKET: &str = "/run/host-containerd/containerd.sock";
    /// The Kubernetes containerd's command line and socket.
    pub const CONTAINERD: &[&str] = &["/usr/bin/containerd"];
    pub const CONTAINERD_SOCKET: &str = "/run/containerd/containerd.sock";

    /// The node's files: both containerds' configs (the Kubernetes one holding `user`'s
    /// credential for `registry`), the kubelet's config and ECR provider config, the trust.
    pub fn lay_out(node: &NodeTree, ca_pem: &str, registry: &str, user: &str, password: &str) {
        node.file(
            "/etc/host-containerd/config.toml",
            "version = 2\nroot = \"/var/lib/host-containerd\"\nstate = \"/run/host-containerd\"\ndisabled_plugins = [\n    \"io.containerd.internal.v1.opt\",\n    \"io.containerd.grpc.v1.cri\",\n]\n\n[grpc]\naddress = \"/run/host-containerd/containerd.sock\"\n",
            0o644,
        );
        node.file(
            "/etc/containerd/config.toml",
            &format!(
                "version = 2\nroot = \"/var/lib/containerd\"\nstate = \"/run/containerd\"\n\n[grpc]\naddress = \"/run/containerd/containerd.sock\"\n\n[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_selinux = true\nsandbox_image = \"localhost/kubernetes/pause:0.1.0\"\n\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = \"shimpei\"\n\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{registry}\".auth]\nusername = \"{user}\"\npassword = \"{password}\"\n"
            ),
            0o644,
        );
        node.file(
            "/etc/kubernetes/kubelet/config",
            "---\nkind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nclusterDomain: cluster.local\nruntimeRequestTimeout: 15m\n",
            0o644,
        );
        node.file(
            "/etc/kubernetes/kubelet/credential-provider-config.yaml",
            "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: ecr-credential-provider\n    matchImages:\n      - \"*.dkr.ecr.*.amazonaws.com\"\n    defaultCacheDuration: \"12h\"\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n",
            0o600,
        );
        node.file("/etc/pki/tls/certs/ca-bundle.crt", ca_pem, 0o644);
        node.link("/etc/ssl/certs", "../pki/tls/certs");
    }
}

/// k3s and RKE2 as they run their runtime: containerd a child of `k3s`/`rke2`, started with
/// `-c /var/lib/rancher/DISTRO/agent/etc/containerd/config.toml -a
/// /run/k3s/containerd/containerd.sock` (k3s `pkg/agent/containerd` `getContainerdArgs`; RKE2
/// keeps k3s's socket), its config rendered from `/etc/rancher/DISTRO/registries.yaml`: the
/// credential in `registry.configs."HOST".auth` (k3s `pkg/agent/templates`,
/// `warnMissingRegistryAuth`), the CA in the generated `certs.d/HOST/hosts.toml`
/// (`writeContainerdHosts`). k3s runs its kubelet inside its own process; RKE2 runs it as a
/// process of its own (rancher/rke2 `pkg/podexecutor/staticpod.go` `Kubelet`) with the runtime
/// endpoint k3s gives it.
pub mod rancher {
    use super::NodeTree;

    pub const SOCKET: &str = "/run/k3s/containerd/containerd.sock";

    /// The agent's command line after its program (`k3s agent`, `rke2 agent`).
    pub const AGENT: &[&str] = &["agent"];

    /// RKE2's kubelet process.
    pub const RKE2_KUBELET: &[&str] = &[
        "/var/lib/rancher/rke2/bin/kubelet",
        "--volume-plugin-dir=/var/lib/kubelet/volumeplugins",
        "--file-check-frequency=5s",
        "--sync-frequency=30s",
        "--config-dir=/var/lib/rancher/rke2/agent/etc/kubelet.conf.d",
        "--kubeconfig=/var/lib/rancher/rke2/agent/kubelet.kubeconfig",
        "--container-runtime-endpoint=unix:///run/k3s/containerd/containerd.sock",
    ];

    /// `distro`'s containerd config (a node path).
    pub fn config(distro: &str) -> String {
        format!("/var/lib/rancher/{distro}/agent/etc/containerd/config.toml")
    }

    /// `distro`'s containerd command line, as its agent starts it.
    pub fn containerd(distro: &str) -> Vec<String> {
        [
            "containerd".to_string(),
            "-c".into(),
            config(distro),
            "-a".into(),
            SOCKET.into(),
            "--state".into(),
            "/run/k3s/containerd".into(),
            "--root".into(),
            format!("/var/lib/rancher/{distro}/agent/containerd"),
        ]
        .to_vec()
    }

    /// The node's files: the agent's config and registries.yaml, and what containerd reads of
    /// them.
    pub fn lay_out(
        node: &NodeTree,
        distro: &str,
        ca_pem: &str,
        registry: &str,
        user: &str,
        password: &str,
    ) {
        let certs = format!("/var/lib/rancher/{distro}/agent/etc/containerd/certs.d");
        let ca = format!("/etc/rancher/{distro}/registry-ca.crt");
        node.file(
            &format!("/etc/rancher/{distro}/config.yaml"),
            "kubelet-arg:\n  - max-pods=110\n",
            0o600,
        );
        node.file(&ca, ca_pem, 0o644);
        node.file(
            &format!("/etc/rancher/{distro}/registries.yaml"),
            &format!(
                "configs:\n  \"{registry}\":\n    auth:\n      username: {user}\n      password: {password}\n    tls:\n      ca_file: {ca}\n"
            ),
            0o600,
        );
        node.file(
            &config(distro),
            &format!(
                "# File generated by {distro}. DO NOT EDIT. Use config.toml.tmpl instead.\nversion = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  stream_server_address = \"127.0.0.1\"\n  stream_server_port = \"10010\"\n\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"{certs}\"\n\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{registry}\".auth]\n  username = \"{user}\"\n  password = \"{password}\"\n"
            ),
            0o600,
        );
        node.file(
            &format!("{certs}/{registry}/hosts.toml"),
            &format!(
                "# File generated by {distro}. DO NOT EDIT.\nserver = \"https://{registry}\"\n\n[host.\"https://{registry}/v2\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = [\"{ca}\"]\n"
            ),
            0o600,
        );
    }
}

/// A node that also runs Docker's containerd (`/usr/bin/containerd`, its default config and
/// `/run/containerd/containerd.sock`), with no credential: started before the Kubernetes
/// runtime, the lowest pid named containerd, and not the kubelet's.
pub mod docker_containerd {
    pub const COMMAND: &[&str] = &["/usr/bin/containerd"];
    pub const SOCKET: &str = "/run/containerd/containerd.sock";
}

/// Container-Optimized OS (GKE) as Kubernetes' GCE scripts lay it out (kubernetes/kubernetes
/// `cluster/gce/config-common.sh`, `cluster/gce/gci/configure.sh` `install-auth-provider-gcp`,
/// `configure-helper.sh`; GKE's own scripts are not public): a read-only root, the kubelet's
/// files under `/home/kubernetes` (its `--config`, the credential provider config
/// `cri-auth-config.yaml`), the provider `auth-provider-gcp` in `/home/kubernetes/bin` (a
/// stateful partition remounted exec), outside `/usr`.
pub mod cos {
    use super::NodeTree;

    pub const PROVIDER_CONFIG: &str = "/home/kubernetes/cri-auth-config.yaml";
    pub const PROVIDER_BIN_DIR: &str = "/home/kubernetes/bin";
    pub const KUBELET: &[&str] = &[
        "/home/kubernetes/bin/kubelet",
        "--v=2",
        "--cloud-provider=external",
        "--kubeconfig=/var/lib/kubelet/kubeconfig",
        "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
        "--image-credential-provider-config=/home/kubernetes/cri-auth-config.yaml",
        "--image-credential-provider-bin-dir=/home/kubernetes/bin",
        "--config=/home/kubernetes/kubelet-config.yaml",
    ];

    /// The kubelet's files and `auth-provider-gcp`, here a script answering the exec protocol
    /// with an access token (user `_token`) for `image_match` (standing in for `*.pkg.dev`) —
    /// run with the node's own /bin/sh, as only inside the node root it can be.
    pub fn lay_out(node: &NodeTree, image_match: &str, token: &str) {
        node.install("/bin/dash", "/bin/sh");
        node.file(
            "/home/kubernetes/kubelet-config.yaml",
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n",
            0o644,
        );
        node.file(
            PROVIDER_CONFIG,
            &format!(
                "kind: CredentialProviderConfig\napiVersion: kubelet.config.k8s.io/v1\nproviders:\n  - name: auth-provider-gcp\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n    matchImages:\n    - \"container.cloud.google.com\"\n    - \"gcr.io\"\n    - \"*.gcr.io\"\n    - \"*.pkg.dev\"\n    - \"{image_match}\"\n    args:\n    - get-credentials\n    - --v=3\n    defaultCacheDuration: 1m\n"
            ),
            0o644,
        );
        node.file(
            &format!("{PROVIDER_BIN_DIR}/auth-provider-gcp"),
            &format!(
                "#!/bin/sh\n[ \"$1\" = get-credentials ] || {{ echo \"usage: auth-provider-gcp get-credentials\" >&2; exit 2; }}\nprintf '{{\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"kind\":\"CredentialProviderResponse\",\"cacheKeyType\":\"Registry\",\"auth\":{{\"{image_match}\":{{\"username\":\"_token\",\"password\":\"{token}\"}}}}}}'\n"
            ),
            0o755,
        );
    }
}
