//! The credentials the node's kubelet would hand containerd for an image, found as the kubelet
//! finds them, each with the source that gave it.
//!
//! The kubelet (k/k `pkg/kubelet/images/image_manager.go`) looks the image's repository up in
//! the union of three keyrings, in this order (k/k `pkg/credentialprovider/secrets/secrets.go`):
//! the pod's imagePullSecrets, the node's docker config, and the credential provider plugins.
//! Each keyring returns **every** entry whose key matches, most specific key first
//! (k/k `pkg/credentialprovider/keyring.go`); the runtime is then asked to pull with each in
//! turn until one succeeds (k/k `pkg/kubelet/kuberuntime/kuberuntime_image.go`), and anonymously
//! only when there is none. Matching ([`urls_match`], [`Keyring`]) and config parsing are pure;
//! [`resolve`] reads files and runs plugins, recording what each source did as evidence.
//! Nothing here prints a password: [`Credentials`]'s `Debug` redacts, and plugin stdout never
//! reaches an error text.
//!
//! [`urls_match`]: crate::keyring::urls_match
//!
//! Each job has its module: `docker_config` (the node's config.json search and the pull
//! secrets' files), `keyring` (the kubelet's lookup), `provider_config` (the plugins'
//! configuration), `exec_protocol` and `exec_plugin` (talking to and running a plugin),
//! `redact` (a plugin's stderr made safe to show), `root_exec` (running inside the node's root)
//! and `containerd_auth` (containerd's own fallback credential); this file is the kubelet's
//! resolve order.

mod containerd_auth;
mod docker_config;
mod exec_plugin;
mod exec_protocol;
mod keyring;
mod provider_config;
mod redact;
mod root_exec;
mod source_problem;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use docker_config::{read_auths, read_node_config, shown_dirs};
use exec_plugin::run_providers;

use super::stop::Stop;
use crate::credentials::Credentials;
use crate::image_ref::ImageRef;
use crate::keyring::lookup_image;
use crate::node_root::NodeRoot;
use crate::vocab::Layer;

pub use containerd_auth::{ContainerdAuthProblem, containerd_registry_auth};
pub use docker_config::{DockerConfigProblem, NodeConfigSearch, node_config_search};
pub use exec_plugin::{KUBELET_PLUGIN_TIMEOUT, PluginProblem, exec_plugin};
pub use exec_protocol::{
    PROVIDER_API_V1, ResponseProblem, parse_provider_response, provider_request,
};
pub use keyring::Keyring;
pub use provider_config::{
    EnvVar, ProviderConfig, ProviderConfigError, parse_provider_config, read_provider_config,
};
pub use redact::redact_stderr;
pub use root_exec::{ROOT_EXEC, exec_in_root, in_node_root};
pub use source_problem::SourceProblem;

/// Where the kubelet's credentials come from on this node.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The node's filesystem: every node path below is read inside it, and plugins run in it.
    pub node: NodeRoot,
    /// The pod's imagePullSecrets (`--docker-config`), config.json or Secret JSON.
    pub pull_secrets: Vec<PathBuf>,
    /// The directories searched for the node's `config.json`, then `.dockercfg`
    /// ([`node_config_search`]).
    pub node_config: NodeConfigSearch,
    /// `--image-credential-provider-config`: a file, or a directory of files.
    pub provider_config: Option<PathBuf>,
    /// `--image-credential-provider-bin-dir`.
    pub provider_bin_dir: Option<PathBuf>,
    pub plugin_timeout: Duration,
    /// containerd's config.toml, for its deprecated per-registry `auth` (the CRI's fallback).
    pub containerd_config: Option<PathBuf>,
    /// The environment plugins start with: the running kubelet's when it was read, else ours.
    pub kubelet_environment: Option<BTreeMap<String, String>>,
    /// Where each setting came from (a flag, the running kubelet, a default), for the report.
    pub origins: Vec<String>,
}

/// Which source a credential, or a piece of evidence, came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    PullSecret(PathBuf),
    NodeConfig(PathBuf),
    Provider(String),
    /// containerd's own `registry.configs."HOST".auth`, used only when the kubelet sent none.
    ContainerdConfig(PathBuf),
    /// `--username` with `--password-stdin`: not a kubelet source.
    Flag,
}

impl CredentialSource {
    /// `pull-secret`, `node-config`, `provider`.
    pub fn kind(&self) -> &'static str {
        match self {
            CredentialSource::PullSecret(_) => "pull-secret",
            CredentialSource::NodeConfig(_) => "node-config",
            CredentialSource::Provider(_) => "provider",
            CredentialSource::ContainerdConfig(_) => "containerd-config",
            CredentialSource::Flag => "flag",
        }
    }

    /// The file, or the provider's name.
    pub fn name(&self) -> String {
        match self {
            CredentialSource::PullSecret(p)
            | CredentialSource::NodeConfig(p)
            | CredentialSource::ContainerdConfig(p) => p.display().to_string(),
            CredentialSource::Provider(name) => name.clone(),
            CredentialSource::Flag => "--username".into(),
        }
    }
}

/// One credential the kubelet would send, in the order it would send them.
#[derive(Debug, Clone)]
pub struct MatchedCredential {
    pub source: CredentialSource,
    /// The keyring key (or plugin `auth` key) that matched.
    pub key: String,
    pub credentials: Credentials,
}

/// What one source did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceOutcome {
    /// Entries matched, by these keys.
    Matched(Vec<String>),
    /// Read, but no key matches the image; `near` says why the closest ones miss.
    NoMatch {
        keys: Vec<String>,
        near: Vec<String>,
    },
    /// Not there (no node config in any search path, no provider config).
    Absent(String),
    /// Could not be used: unreadable, malformed, a plugin that failed. The kubelet goes on.
    Failed(SourceProblem),
    /// Needs something only a pod gives (a service-account token).
    NeedsPod(String),
    /// Has a credential the rules pass over (containerd's own, when the kubelet sent one).
    NotUsed(String),
}

#[derive(Debug, Clone)]
pub struct SourceEvidence {
    pub source: CredentialSource,
    pub outcome: SourceOutcome,
}

/// The kubelet's credentials for one image, and how each source answered.
#[derive(Debug, Clone)]
pub struct CredentialPlan {
    /// What the kubelet looks up and sends to plugins: the repository, no tag or digest.
    pub image: String,
    pub candidates: Vec<MatchedCredential>,
    pub sources: Vec<SourceEvidence>,
    /// Where the kubelet's settings were taken from.
    pub origins: Vec<String>,
}

/// One walk of the pull loop: with which credential (none: anonymous) and where it stopped.
#[derive(Debug, Clone)]
pub struct CredentialAttempt {
    pub candidate: Option<MatchedCredential>,
    pub stop: Option<Stop>,
}

impl CredentialAttempt {
    pub fn of(
        candidate: Option<MatchedCredential>,
        outcome: &super::walk::WalkRecord,
    ) -> CredentialAttempt {
        CredentialAttempt {
            candidate,
            stop: outcome.result.as_ref().err().cloned(),
        }
    }

    /// Refused by the registry or its token service: the kubelet tries its next credential.
    pub fn refused(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| matches!(s.mechanism_or_layer(), Layer::Auth | Layer::Forbidden))
    }
}

// ---------------------------------------------------------------------------------------------
// The union, in the kubelet's order

// ---------------------------------------------------------------------------------------------
// The union, in the kubelet's order

/// Every credential the kubelet would try for `image`, and what each source did.
pub async fn resolve(sources: &Sources, image: &ImageRef) -> CredentialPlan {
    let target = lookup_image(image);
    let mut evidence = Vec::new();
    let mut candidates = Vec::new();

    // 1. The pod's imagePullSecrets: one keyring over all of them.
    if !sources.pull_secrets.is_empty() {
        let mut keyring = Keyring::default();
        for path in &sources.pull_secrets {
            let source = CredentialSource::PullSecret(path.clone());
            match read_auths(path) {
                Ok(auths) => {
                    for (key, c) in auths {
                        keyring.add(&key, source.clone(), c);
                    }
                }
                // The kubelet's MakeDockerKeyring returns this error: the pull fails outright.
                Err(problem) => evidence.push(SourceEvidence {
                    source,
                    outcome: SourceOutcome::Failed(SourceProblem::PullSecret(problem.into())),
                }),
            }
        }
        let found = keyring.lookup(&target);
        for path in &sources.pull_secrets {
            let source = CredentialSource::PullSecret(path.clone());
            if evidence.iter().any(|e| e.source == source) {
                continue;
            }
            let mine: Vec<MatchedCredential> = found
                .iter()
                .filter(|c| c.source == source)
                .cloned()
                .collect();
            let mut own = Keyring::default();
            for c in keyring
                .entries
                .values()
                .flatten()
                .filter(|c| c.source == source)
            {
                own.add(&c.key, source.clone(), c.credentials.clone());
            }
            evidence.push(SourceEvidence {
                outcome: own.outcome(&target, &mine),
                source,
            });
        }
        candidates.extend(found);
    }

    // 2. The node's docker config: the first valid file of the search.
    match read_node_config(&sources.node, &sources.node_config) {
        Ok(Some((path, auths))) => {
            let source = CredentialSource::NodeConfig(path);
            let mut keyring = Keyring::default();
            for (key, c) in auths {
                keyring.add(&key, source.clone(), c);
            }
            let found = keyring.lookup(&target);
            evidence.push(SourceEvidence {
                outcome: keyring.outcome(&target, &found),
                source,
            });
            candidates.extend(found);
        }
        Ok(None) => evidence.push(SourceEvidence {
            source: CredentialSource::NodeConfig(
                sources
                    .node_config
                    .config_json_dirs
                    .first()
                    .map(|d| d.join("config.json"))
                    .unwrap_or_default(),
            ),
            outcome: SourceOutcome::Absent(format!(
                "no valid config.json in {} nor .dockercfg in {}",
                shown_dirs(&sources.node_config.config_json_dirs),
                shown_dirs(&sources.node_config.dockercfg_dirs)
            )),
        }),
        Err(problem) => evidence.push(SourceEvidence {
            source: CredentialSource::NodeConfig(problem.path().to_path_buf()),
            outcome: SourceOutcome::Failed(SourceProblem::NodeConfig(problem.into())),
        }),
    }

    // 3. The credential provider plugins: their answers form one keyring.
    let (plugin_candidates, plugin_evidence) = run_providers(sources, &target).await;
    candidates.extend(plugin_candidates);
    evidence.extend(plugin_evidence);

    // containerd's CRI falls back to its own config only when the kubelet sent no credential.
    if let Some(path) = &sources.containerd_config {
        let source = CredentialSource::ContainerdConfig(path.clone());
        let outcome = match sources.node.read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                SourceOutcome::Absent(format!("no {}", path.display()))
            }
            Err(error) => SourceOutcome::Failed(SourceProblem::ContainerdUnreadable {
                path: path.clone(),
                error: error.into(),
            }),
            Ok(text) => match containerd_registry_auth(&text, &image.registry) {
                Err(problem) => SourceOutcome::Failed(SourceProblem::ContainerdAuth {
                    path: path.clone(),
                    problem: problem.into(),
                }),
                Ok(None) => SourceOutcome::NoMatch {
                    keys: vec![],
                    near: vec![],
                },
                Ok(Some(_)) if !candidates.is_empty() => SourceOutcome::NotUsed(format!(
                    "registry.configs.\"{}\".auth is there, but containerd uses it only when the kubelet sends no credential",
                    image.registry
                )),
                Ok(Some(credentials)) => {
                    candidates.push(MatchedCredential {
                        source: source.clone(),
                        key: image.registry.clone(),
                        credentials,
                    });
                    SourceOutcome::Matched(vec![image.registry.clone()])
                }
            },
        };
        evidence.push(SourceEvidence { source, outcome });
    }

    CredentialPlan {
        image: target,
        candidates,
        sources: evidence,
        origins: sources.origins.clone(),
    }
}

#[cfg(test)]
mod tests {
    use crate::probe::process::RunningProcess;

    #[test]
    fn the_running_kubelet_is_read_from_proc() {
        let proc = std::env::temp_dir().join(format!("pullpath-proc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&proc);
        for (pid, comm) in [("7", "containerd"), ("42", "kubelet")] {
            std::fs::create_dir_all(proc.join(pid)).expect("pid dir");
            std::fs::write(proc.join(pid).join("comm"), format!("{comm}\n")).expect("comm");
        }
        std::fs::write(
        proc.join("42/cmdline"),
        b"/usr/bin/kubelet\0--root-dir=/data/kubelet\0--image-credential-provider-config\0/etc/cp.yaml\0-image-credential-provider-bin-dir=/opt/cp\0--v=2\0",
    )
    .expect("cmdline");
        std::fs::write(
            proc.join("42/environ"),
            b"HOME=/root\0HTTPS_PROXY=http://p:3128\0",
        )
        .expect("environ");
        let kubelet = RunningProcess::read(&proc, None, "kubelet").expect("found by name");
        assert_eq!(kubelet.pid, 42);
        assert_eq!(kubelet.flag("root-dir").as_deref(), Some("/data/kubelet"));
        assert_eq!(
            kubelet.flag("image-credential-provider-config").as_deref(),
            Some("/etc/cp.yaml")
        );
        assert_eq!(
            kubelet.flag("image-credential-provider-bin-dir").as_deref(),
            Some("/opt/cp")
        );
        assert_eq!(kubelet.flag("image-credential-provider"), None);
        assert_eq!(
            kubelet
                .environ
                .as_ref()
                .and_then(|e| e.get("HOME"))
                .map(String::as_str),
            Some("/root")
        );
        assert!(RunningProcess::read(&proc, Some(99), "kubelet").is_none());
        let _ = std::fs::remove_dir_all(&proc);
    }
}
