//! Running the credential provider plugins as the kubelet runs them: the matching ones, in the
//! node's root and environment, within the kubelet's timeout, their answers one keyring.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{
    CredentialSource, Keyring, MatchedCredential, ProviderConfig, ResponseProblem, SourceEvidence,
    SourceOutcome, SourceProblem, Sources, in_node_root, parse_provider_response, provider_request,
    read_provider_config, redact_stderr,
};
use crate::credentials::Credentials;
use crate::keyring::{near_miss, urls_match};
use crate::node_root::NodeRoot;

/// The kubelet's exec timeout for a plugin (k/k `plugin/plugin.go`: `1*time.Minute`).
pub const KUBELET_PLUGIN_TIMEOUT: Duration = Duration::from_secs(60);
/// A plugin's stdout above this is not a credential response.
const MAX_PLUGIN_OUTPUT: u64 = 1024 * 1024;

/// Why a plugin gave no credentials, with the plugin's name; worded as the kubelet logs it where
/// it has words for it.
#[derive(Debug, thiserror::Error)]
pub enum PluginProblem {
    #[error(
        "plugin binary executable {} did not exist (the kubelet would not start)",
        binary.display()
    )]
    NoBinary { binary: PathBuf },
    /// This executable (which enters the node's root for the plugin) cannot be found.
    #[error("cannot run plugin {name} inside the node's root: {error}")]
    NodeRoot { name: String, error: std::io::Error },
    #[error("error execing credential provider plugin {name}: {error}")]
    Spawn { name: String, error: std::io::Error },
    #[error(
        "error execing credential provider plugin {name} for image {image}: context deadline exceeded (after {})",
        humantime(*timeout)
    )]
    Timeout {
        name: String,
        image: String,
        timeout: Duration,
    },
    #[error("waiting for plugin {name}: {error}")]
    Wait { name: String, error: std::io::Error },
    /// Exited unsuccessfully; `stderr` already redacted.
    #[error(
        "error execing credential provider plugin {name} for image {image}: {status}{}",
        if stderr.is_empty() { String::new() } else { format!(": {stderr}") }
    )]
    Exited {
        name: String,
        image: String,
        status: ExitStatus,
        stderr: String,
    },
    #[error("plugin {name}: stdout exceeds {limit} bytes")]
    OutputTooLarge { name: String, limit: u64 },
    #[error("plugin {name}: {problem}")]
    Response {
        name: String,
        problem: ResponseProblem,
    },
}

/// Run one plugin as the kubelet runs it: `bindir/name args…` (node paths), the kubelet's
/// environment (`environment`; `None`: ours) plus `env`, the request on stdin, the response on
/// stdout, within `timeout`. Inside a node root the plugin runs *in* it ([`in_node_root`]): the
/// node's binary with the node's libraries, its file arguments (`/etc/kubernetes/azure.json`)
/// and every path it opens being the node's.
pub async fn exec_plugin(
    node: &NodeRoot,
    provider: &ProviderConfig,
    bin_dir: &Path,
    image: &str,
    timeout: Duration,
    environment: Option<&BTreeMap<String, String>>,
) -> Result<Vec<(String, Credentials)>, PluginProblem> {
    let binary = bin_dir.join(&provider.name);
    if !node.is_file(&binary) {
        return Err(PluginProblem::NoBinary { binary });
    }
    let name = || provider.name.clone();
    let mut command = in_node_root(node, &binary).map_err(|error| PluginProblem::NodeRoot {
        name: name(),
        error,
    })?;
    if let Some(environment) = environment {
        command.env_clear().envs(environment);
    }
    command
        .args(&provider.args)
        .envs(provider.env.iter().map(|v| (&v.name, &v.value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|error| PluginProblem::Spawn {
        name: name(),
        error,
    })?;
    let request = provider_request(&provider.api_version, image);
    let mut stdin = child.stdin.take();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let run = async {
        let feed = async {
            if let Some(mut pipe) = stdin.take() {
                // A plugin that never reads its stdin is not an error of ours.
                let _ = pipe.write_all(request.as_bytes()).await;
            }
        };
        let read_out = async {
            let mut buffer = Vec::new();
            if let Some(pipe) = stdout.take() {
                let _ = pipe.take(MAX_PLUGIN_OUTPUT).read_to_end(&mut buffer).await;
            }
            buffer
        };
        let read_err = async {
            let mut buffer = Vec::new();
            if let Some(pipe) = stderr.take() {
                let _ = pipe.take(64 * 1024).read_to_end(&mut buffer).await;
            }
            buffer
        };
        let ((), out, err) = tokio::join!(feed, read_out, read_err);
        let status = child.wait().await;
        (status, out, err)
    };
    let (status, out, err) = match tokio::time::timeout(timeout, run).await {
        Ok(done) => done,
        Err(_) => {
            return Err(PluginProblem::Timeout {
                name: name(),
                image: image.to_string(),
                timeout,
            });
        }
    };
    let status = status.map_err(|error| PluginProblem::Wait {
        name: name(),
        error,
    })?;
    if !status.success() {
        return Err(PluginProblem::Exited {
            name: name(),
            image: image.to_string(),
            status,
            stderr: redact_stderr(&err),
        });
    }
    if out.len() as u64 >= MAX_PLUGIN_OUTPUT {
        return Err(PluginProblem::OutputTooLarge {
            name: name(),
            limit: MAX_PLUGIN_OUTPUT,
        });
    }
    parse_provider_response(&out, &provider.api_version).map_err(|problem| {
        PluginProblem::Response {
            name: name(),
            problem,
        }
    })
}

fn humantime(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

pub(super) async fn run_providers(
    sources: &Sources,
    target: &str,
) -> (Vec<MatchedCredential>, Vec<SourceEvidence>) {
    let mut evidence = Vec::new();
    let Some(config_path) = &sources.provider_config else {
        evidence.push(SourceEvidence {
            source: CredentialSource::Provider("(none)".into()),
            outcome: SourceOutcome::Absent(
                "no --image-credential-provider-config: the kubelet runs no plugin".into(),
            ),
        });
        return (Vec::new(), evidence);
    };
    let providers = match read_provider_config(&sources.node, config_path) {
        Ok(p) => p,
        Err(e) => {
            evidence.push(SourceEvidence {
                source: CredentialSource::Provider(config_path.display().to_string()),
                outcome: SourceOutcome::Failed(SourceProblem::ProviderConfig(e)),
            });
            return (Vec::new(), evidence);
        }
    };
    let Some(bin_dir) = &sources.provider_bin_dir else {
        evidence.push(SourceEvidence {
            source: CredentialSource::Provider(config_path.display().to_string()),
            outcome: SourceOutcome::Failed(SourceProblem::NoProviderBinDir),
        });
        return (Vec::new(), evidence);
    };
    let mut keyring = Keyring::default();
    for provider in &providers {
        let source = CredentialSource::Provider(provider.name.clone());
        if !provider.match_images.iter().any(|m| urls_match(m, target)) {
            let near = provider
                .match_images
                .iter()
                .filter_map(|m| near_miss(m, target))
                .collect();
            evidence.push(SourceEvidence {
                source,
                outcome: SourceOutcome::NoMatch {
                    keys: provider.match_images.clone(),
                    near,
                },
            });
            continue;
        }
        if provider.token_attributes.is_some() {
            evidence.push(SourceEvidence {
                source,
                outcome: SourceOutcome::NeedsPod(
                    "tokenAttributes: the plugin needs the pod's service-account token; checked only in cluster mode".into(),
                ),
            });
            continue;
        }
        match exec_plugin(
            &sources.node,
            provider,
            bin_dir,
            target,
            sources.plugin_timeout,
            sources.kubelet_environment.as_ref(),
        )
        .await
        {
            Ok(auths) => {
                let mut own = Keyring::default();
                for (key, c) in auths {
                    keyring.add(&key, source.clone(), c.clone());
                    own.add(&key, source.clone(), c);
                }
                let found = own.lookup(target);
                evidence.push(SourceEvidence {
                    outcome: own.outcome(target, &found),
                    source,
                });
            }
            Err(problem) => evidence.push(SourceEvidence {
                source,
                outcome: SourceOutcome::Failed(SourceProblem::Plugin(problem.into())),
            }),
        }
    }
    (keyring.lookup(target), evidence)
}
