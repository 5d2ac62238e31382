//! A lab node's root filesystem, laid out as a node's `/` for the probe pod's hostPath.

use std::path::{Path, PathBuf};

use super::LabGuard;
use super::node_image::{
    AKS_PROVIDER_BIN_DIR, AKS_PROVIDER_CONFIG, NodeTree, aks_credential_provider, aks_resolver,
    bottlerocket, cos, rancher,
};

/// How a lab node's image lays out what its kubelet and runtime read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeImage {
    /// A plain node: resolv.conf and hosts as files, the kubelet's credential in
    /// `/var/lib/kubelet/config.json` (the lab's `kubelet/root/config.json`, when a scenario
    /// writes one), the runtime endpoint in the kubelet's `--config`.
    Plain,
    /// AKS Ubuntu (AgentBaker): `/etc/resolv.conf` → `/run/systemd/resolve/resolv.conf`, the
    /// kubelet's `--config=/etc/default/kubeletconfig.json` (0600) and `--resolv-conf`, and the
    /// registry's credential only from `acr-credential-provider`, which reads the root-only
    /// `/etc/kubernetes/azure.json` (here alice's, for `*.example.test`).
    AksUbuntu,
    /// Amazon Linux 2023 (nodeadm), the lab's `al2023` node: its trust only under /etc/pki
    /// behind the /etc/ssl/certs link, containerd's proxy in its unit's `EnvironmentFile=`,
    /// `config_path = "/etc/containerd/certs.d:/etc/docker/certs.d"` with the registry's mirror
    /// in the second root (lab.py `build_al2023_root`); the kubelet's flags as nodeadm writes
    /// them, its ECR credential provider matching no lab image.
    Al2023,
    /// k3s, the lab's `k3s` node: no /etc/containerd, containerd started as k3s starts it
    /// (`-c /var/lib/rancher/k3s/agent/etc/containerd/config.toml -a
    /// /run/k3s/containerd/containerd.sock`), and no kubelet process: the `k3s agent` process
    /// runs it inside (lab.py `build_k3s_root`).
    K3s,
    /// Bottlerocket (aws-k8s), once lab.py builds its root (`node_image::bottlerocket`): two
    /// containerds in the node's pid namespace, `host-containerd` first, the Kubernetes one's
    /// `/etc/containerd/config.toml` holding the registry's credential; a read-only root.
    Bottlerocket,
    /// Azure Linux 3 (AgentBaker), once lab.py builds its root: containerd 2.x with a version 3
    /// config, trust only under /etc/pki behind absolute links (`node_image::azure_linux_trust`),
    /// AKS's kubelet flags and `acr-credential-provider`.
    AzureLinux3,
    /// COS-like, once lab.py builds its root (`node_image::cos`): a read-only root, the
    /// kubelet's files and `auth-provider-gcp` under `/home/kubernetes`.
    Cos,
    /// RKE2, once lab.py builds its root (`node_image::rancher`): the kubelet a process of its
    /// own, containerd a child of `rke2 agent` on `/run/k3s/containerd/containerd.sock`.
    Rke2,
}

impl NodeImage {
    /// Whether lab.py lays out this node's root itself (`node_image_root`), so that its own
    /// containerd reads the image's files at their node paths: the probe pod's /host is a copy.
    pub fn root_built_by_lab(self) -> bool {
        !matches!(self, NodeImage::Plain | NodeImage::AksUbuntu)
    }

    /// The kubelet's command line as the image starts it (node paths).
    pub fn kubelet_command(self) -> Vec<String> {
        let flags: &[&str] = match self {
            NodeImage::Plain => &[
                "/usr/local/bin/kubelet",
                "--config=/var/lib/kubelet/config.yaml",
            ],
            NodeImage::AksUbuntu => &[
                "/usr/local/bin/kubelet",
                "--enable-server",
                "--node-labels=kubernetes.azure.com/agentpool=user",
                "--v=2",
                "--config=/etc/default/kubeletconfig.json",
                "--resolv-conf=/run/systemd/resolve/resolv.conf",
            ],
            NodeImage::Al2023 => &[
                "/usr/bin/kubelet",
                "--config=/etc/kubernetes/kubelet/config.json",
                "--kubeconfig=/var/lib/kubelet/kubeconfig",
                "--image-credential-provider-bin-dir=/etc/eks/image-credential-provider",
                "--image-credential-provider-config=/etc/eks/image-credential-provider/config.json",
                "--node-ip=10.10.11.2",
                "--cloud-provider=external",
                "--node-labels=eks.amazonaws.com/nodegroup=al2023",
            ],
            // No kubelet process: k3s runs the kubelet inside its own (`pkg/daemons/executor`
            // `Embedded.Kubelet`), its flags never on a command line.
            NodeImage::K3s => &["/usr/local/bin/k3s", "agent"],
            NodeImage::Bottlerocket => bottlerocket::KUBELET,
            NodeImage::AzureLinux3 => &[
                "/usr/local/bin/kubelet",
                "--enable-server",
                "--node-labels=kubernetes.azure.com/agentpool=azl3",
                "--v=2",
                "--config=/etc/default/kubeletconfig.json",
            ],
            NodeImage::Cos => cos::KUBELET,
            NodeImage::Rke2 => rancher::RKE2_KUBELET,
        };
        let mut command: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        if let NodeImage::AksUbuntu | NodeImage::AzureLinux3 = self {
            command.push(format!(
                "--image-credential-provider-config={AKS_PROVIDER_CONFIG}"
            ));
            command.push(format!(
                "--image-credential-provider-bin-dir={AKS_PROVIDER_BIN_DIR}"
            ));
        }
        command
    }
}

/// The kubelet's configuration file: only what the probe reads of it, the CRI endpoint.
const KUBELET_CONFIG: &str = r#"{"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1",
  "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock", "cgroupDriver": "systemd"}
"#;

/// AL2023's ECR credential provider (nodeadm's `image-credential-provider/config.json`):
/// matchImages of ECR only, so no lab image gets a credential from it.
const ECR_PROVIDER_CONFIG: &str = r#"{"apiVersion": "kubelet.config.k8s.io/v1", "kind": "CredentialProviderConfig",
  "providers": [{"name": "ecr-credential-provider", "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
    "defaultCacheDuration": "12h", "matchImages": ["*.dkr.ecr.*.amazonaws.com", "*.dkr.ecr.*.amazonaws.com.cn", "public.ecr.aws"]}]}
"#;

/// A copy of a lab node image's root (lab.py `node_image_root`) at `root`: files hard-linked,
/// links made again as they are (their targets node paths), directories with their modes.
fn copy_image_root(from: &Path, root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut pending = vec![from.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let relative = dir.strip_prefix(from).expect("under the image root");
        let at = root.join(relative);
        std::fs::create_dir_all(&at).expect("node dir");
        let mode = std::fs::metadata(&dir).expect("dir").permissions().mode();
        std::fs::set_permissions(&at, std::fs::Permissions::from_mode(mode)).expect("mode");
        for entry in std::fs::read_dir(&dir).expect("image root").flatten() {
            let path = entry.path();
            let to = at.join(entry.file_name());
            match entry.file_type() {
                // lab.py's staging mount points for the node's /var/lib and /run.
                Ok(t)
                    if t.is_dir()
                        && [".var-lib", ".run"]
                            .contains(&entry.file_name().to_str().unwrap_or("")) => {}
                Ok(t) if t.is_dir() => pending.push(path),
                Ok(t) if t.is_symlink() => {
                    let target = std::fs::read_link(&path).expect("link");
                    std::os::unix::fs::symlink(target, &to).expect("node link");
                }
                Ok(_) => std::fs::hard_link(&path, &to).expect("node file"),
                Err(e) => panic!("{}: {e}", path.display()),
            }
        }
    }
}

/// The node's root filesystem as its probe pod mounts it at /host: a directory laid out like a
/// node's `/`, holding that lab node's own files at their node paths — its resolver and hosts
/// (its namespace's), containerd's config.toml where its `--config` names it (its `config_path` and the CA
/// its hosts.toml name, at the absolute paths they give), its CRI socket at
/// /run/containerd/containerd.sock, the kubelet's config.json in the kubelet's default root dir,
/// the machine's trust bundle. Files are hard links (the socket too: a unix socket is its inode),
/// so the directory lives beside the lab's state, on its filesystem. Nothing links out of the
/// root: the probe resolves every link inside it, as a node's root is read in a probe pod.
pub fn node_root(
    lab: &LabGuard,
    base: &Path,
    namespace: &str,
    containerd: &str,
    image: NodeImage,
) -> PathBuf {
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
    let place_tree = |dir: &Path| {
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
    let resolv_conf = PathBuf::from(format!("/etc/netns/{ns}/resolv.conf"));
    let hosts = PathBuf::from(format!("/etc/netns/{ns}/hosts"));
    let tree = NodeTree::at_root(&root);
    if image.root_built_by_lab() {
        // What the node's containerd itself reads, at the node paths it reads them.
        copy_image_root(&lab.status.roots[containerd], &root);
        if image == NodeImage::Al2023 {
            tree.file("/etc/kubernetes/kubelet/config.json", KUBELET_CONFIG, 0o644);
            tree.file(
                "/etc/eks/image-credential-provider/config.json",
                ECR_PROVIDER_CONFIG,
                0o644,
            );
        }
        // k3s's and RKE2's socket is in their root already, where containerd's `-a` put it.
        if let NodeImage::Al2023
        | NodeImage::Bottlerocket
        | NodeImage::AzureLinux3
        | NodeImage::Cos = image
        {
            place(
                lab.socket(containerd),
                Path::new("/run/containerd/containerd.sock"),
            );
        }
        return root;
    }
    match image {
        NodeImage::Plain => {
            place(&resolv_conf, Path::new("/etc/resolv.conf"));
            place(&hosts, Path::new("/etc/hosts"));
            // Only where the scenario gives the node one: many nodes have none.
            let config_json = lab.status.kubelet.join("root").join("config.json");
            if config_json.exists() {
                place(&config_json, Path::new("/var/lib/kubelet/config.json"));
            }
            tree.file("/var/lib/kubelet/config.yaml", KUBELET_CONFIG, 0o644);
        }
        NodeImage::Al2023
        | NodeImage::K3s
        | NodeImage::Bottlerocket
        | NodeImage::AzureLinux3
        | NodeImage::Cos
        | NodeImage::Rke2 => unreachable!("image nodes return above"),
        NodeImage::AksUbuntu => {
            let read = |path: &Path| std::fs::read_to_string(path).expect("the namespace's file");
            aks_resolver(&tree, &read(&resolv_conf), &read(&hosts));
            tree.file("/etc/default/kubeletconfig.json", KUBELET_CONFIG, 0o600);
            let secret = super::password("alice").expect("alice's password");
            aks_credential_provider(&tree, "*.example.test", "alice", secret);
        }
    }
    let containerd_dir = state.join("containerd").join(containerd);
    // At the path the lab's containerd was started with (`--config`), where the probe reads it.
    place(
        &containerd_dir.join("config.toml"),
        &containerd_dir.join("config.toml"),
    );
    place_tree(&containerd_dir.join("certs.d"));
    place_tree(&state.join("pki"));
    place(
        lab.socket(containerd),
        Path::new("/run/containerd/containerd.sock"),
    );
    place(
        Path::new("/etc/ssl/certs/ca-certificates.crt"),
        Path::new("/etc/ssl/certs/ca-certificates.crt"),
    );
    root
}
