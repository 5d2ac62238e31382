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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::creds::{self, Credentials};
use super::stop::Stop;
use crate::image_ref::ImageRef;
pub use crate::keyring::lookup_image;
use crate::keyring::{is_default_registry, near_miss, normalize_key, urls_match};
use crate::node_root::NodeRoot;
use crate::vocab::Layer;

/// The kubelet's exec timeout for a plugin (k/k `plugin/plugin.go`: `1*time.Minute`).
pub const KUBELET_PLUGIN_TIMEOUT: Duration = Duration::from_secs(60);
/// The request and response API the exec protocol speaks.
pub const PROVIDER_API_V1: &str = "credentialprovider.kubelet.k8s.io/v1";
/// The API versions the kubelet decodes a `CredentialProviderConfig` from.
const CONFIG_APIS: [&str; 3] = [
    "kubelet.config.k8s.io/v1",
    "kubelet.config.k8s.io/v1beta1",
    "kubelet.config.k8s.io/v1alpha1",
];
const PROVIDER_APIS: [&str; 3] = [
    PROVIDER_API_V1,
    "credentialprovider.kubelet.k8s.io/v1beta1",
    "credentialprovider.kubelet.k8s.io/v1alpha1",
];
/// A plugin's stdout above this is not a credential response.
const MAX_PLUGIN_OUTPUT: u64 = 1024 * 1024;
/// How much of a plugin's stderr the report keeps.
const STDERR_KEPT: usize = 300;

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

/// The kubelet's search paths for the node's docker config (k/k `config.go`:
/// `DefaultDockerConfigJSONPaths` and `DefaultDockercfgPaths`, the preferred path being the
/// kubelet's `--root-dir`).
#[derive(Debug, Clone, Default)]
pub struct NodeConfigSearch {
    /// `<dir>/config.json`, first valid file wins.
    pub config_json_dirs: Vec<PathBuf>,
    /// Then `<dir>/.dockercfg`.
    pub dockercfg_dirs: Vec<PathBuf>,
}

/// The kubelet's order: its root dir, its working directory, `$HOME/.docker` (`$HOME` for
/// `.dockercfg`), then `/.docker` (`/`).
pub fn node_config_search(
    root_dir: &Path,
    working_dir: Option<&Path>,
    home: Option<&Path>,
) -> NodeConfigSearch {
    let mut json = vec![root_dir.to_path_buf()];
    let mut legacy = vec![root_dir.to_path_buf()];
    if let Some(cwd) = working_dir {
        json.push(cwd.to_path_buf());
        legacy.push(cwd.to_path_buf());
    }
    if let Some(home) = home {
        json.push(home.join(".docker"));
        legacy.push(home.to_path_buf());
    }
    json.push(PathBuf::from("/.docker"));
    legacy.push(PathBuf::from("/"));
    NodeConfigSearch {
        config_json_dirs: json,
        dockercfg_dirs: legacy,
    }
}

/// Which source a credential, or a piece of evidence, came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    PullSecret(PathBuf),
    NodeConfig(PathBuf),
    Provider(String),
    /// containerd's own `registry.configs."HOST".auth`, used only when the kubelet sent none.
    ContainerdConfig(PathBuf),
    /// `--username` with `--password-stdin`: not a kubelet source.
    Flag,
}

impl Source {
    /// `pull-secret`, `node-config`, `provider`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::PullSecret(_) => "pull-secret",
            Source::NodeConfig(_) => "node-config",
            Source::Provider(_) => "provider",
            Source::ContainerdConfig(_) => "containerd-config",
            Source::Flag => "flag",
        }
    }

    /// The file, or the provider's name.
    pub fn name(&self) -> String {
        match self {
            Source::PullSecret(p) | Source::NodeConfig(p) | Source::ContainerdConfig(p) => {
                p.display().to_string()
            }
            Source::Provider(name) => name.clone(),
            Source::Flag => "--username".into(),
        }
    }
}

/// One credential the kubelet would send, in the order it would send them.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub source: Source,
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
    Failed(String),
    /// Needs something only a pod gives (a service-account token).
    NeedsPod(String),
    /// Has a credential the rules pass over (containerd's own, when the kubelet sent one).
    NotUsed(String),
}

#[derive(Debug, Clone)]
pub struct SourceEvidence {
    pub source: Source,
    pub outcome: SourceOutcome,
}

/// The kubelet's credentials for one image, and how each source answered.
#[derive(Debug, Clone)]
pub struct CredentialPlan {
    /// What the kubelet looks up and sends to plugins: the repository, no tag or digest.
    pub image: String,
    pub candidates: Vec<Candidate>,
    pub sources: Vec<SourceEvidence>,
    /// Where the kubelet's settings were taken from.
    pub origins: Vec<String>,
}

/// One walk of the pull loop: with which credential (none: anonymous) and where it stopped.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub candidate: Option<Candidate>,
    pub stop: Option<Stop>,
}

impl Attempt {
    pub fn of(candidate: Option<Candidate>, outcome: &super::walk::Outcome) -> Attempt {
        Attempt {
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

/// The kubelet's `BasicDockerKeyring`: entries under normalized keys; lookup walks the keys
/// reverse-sorted, so `quay.io/team` comes before `quay.io`.
#[derive(Debug, Default, Clone)]
pub struct Keyring {
    entries: BTreeMap<String, Vec<Candidate>>,
}

impl Keyring {
    pub fn add(&mut self, location: &str, source: Source, credentials: Credentials) {
        let key = normalize_key(location);
        self.entries
            .entry(key.clone())
            .or_default()
            .push(Candidate {
                source,
                key,
                credentials,
            });
    }

    pub fn keys(&self) -> Vec<String> {
        self.entries.keys().rev().cloned().collect()
    }

    /// Every matching entry, most specific key first; Docker Hub images fall back to the
    /// `index.docker.io` entry.
    pub fn lookup(&self, image: &str) -> Vec<Candidate> {
        let found: Vec<Candidate> = self
            .entries
            .iter()
            .rev()
            .filter(|(key, _)| urls_match(key, image))
            .flat_map(|(_, c)| c.iter().cloned())
            .collect();
        if !found.is_empty() || !is_default_registry(image) {
            return found;
        }
        self.entries
            .get("index.docker.io")
            .cloned()
            .unwrap_or_default()
    }

    /// The evidence of a lookup in this keyring.
    fn outcome(&self, image: &str, found: &[Candidate]) -> SourceOutcome {
        if found.is_empty() {
            let keys = self.keys();
            let near = keys.iter().filter_map(|k| near_miss(k, image)).collect();
            SourceOutcome::NoMatch { keys, near }
        } else {
            let mut keys: Vec<String> = found.iter().map(|c| c.key.clone()).collect();
            keys.dedup();
            SourceOutcome::Matched(keys)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// CredentialProviderConfig (k/k plugin/config.go)

/// One provider of a `CredentialProviderConfig`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfig {
    pub name: String,
    #[serde(default)]
    pub match_images: Vec<String>,
    #[serde(default)]
    pub default_cache_duration: Option<String>,
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: Vec<EnvVar>,
    /// Service-account-token mode (KEP-4412); only its presence matters here.
    #[serde(default)]
    pub token_attributes: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigFile {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    providers: Vec<ProviderConfig>,
}

/// A `CredentialProviderConfig` the kubelet would refuse (it would not start).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path} is not a CredentialProviderConfig: {reason}")]
    Invalid { path: String, reason: String },
    #[error("duplicate provider name {name:?} in {path}")]
    Duplicate { path: String, name: String },
}

/// Parse one config file's text (YAML or JSON), validated as the kubelet validates it.
pub fn parse_provider_config(text: &str, path: &str) -> Result<Vec<ProviderConfig>, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        path: path.to_string(),
        reason,
    };
    // A parser's message may quote a value (an `env` value can be a secret): quotes are cut.
    let file: ConfigFile =
        serde_yaml_ng::from_str(text).map_err(|e| invalid(unquoted(&e.to_string())))?;
    if !CONFIG_APIS.contains(&file.api_version.as_str()) {
        return Err(invalid(format!(
            "apiVersion {:?} (want kubelet.config.k8s.io/v1)",
            file.api_version
        )));
    }
    if file.kind != "CredentialProviderConfig" {
        return Err(invalid(format!("kind {:?}", file.kind)));
    }
    if file.providers.is_empty() {
        return Err(invalid("at least 1 item in plugins is required".into()));
    }
    for p in &file.providers {
        if p.name.is_empty() || p.name.contains(['/', '\\']) || p.name == "." || p.name == ".." {
            return Err(invalid(format!(
                "provider name {:?} is not a file name",
                p.name
            )));
        }
        if p.match_images.is_empty() {
            return Err(invalid(format!(
                "provider {}: matchImages is required",
                p.name
            )));
        }
        if p.default_cache_duration.is_none() {
            return Err(invalid(format!(
                "provider {}: defaultCacheDuration is required",
                p.name
            )));
        }
        if !PROVIDER_APIS.contains(&p.api_version.as_str()) {
            return Err(invalid(format!(
                "provider {}: apiVersion {:?} is not a credentialprovider.kubelet.k8s.io version",
                p.name, p.api_version
            )));
        }
    }
    Ok(file.providers)
}

/// `text` with every double-quoted part replaced by `"…"`.
fn unquoted(text: &str) -> String {
    text.split('"')
        .enumerate()
        .map(|(i, part)| if i % 2 == 1 { "…" } else { part })
        .collect::<Vec<_>>()
        .join("\"")
}

/// Read a config file, or every `*.json|*.yaml|*.yml` of a directory in lexicographic order,
/// merged; a name twice is an error (k/k plugin/config.go).
pub fn read_provider_config(
    node: &NodeRoot,
    path: &Path,
) -> Result<Vec<ProviderConfig>, ConfigError> {
    let shown = path.display().to_string();
    let unreadable = |e: std::io::Error| ConfigError::Unreadable {
        path: shown.clone(),
        reason: e.to_string(),
    };
    let files: Vec<PathBuf> = if node.is_dir(path) {
        // `read_dir` sorts by name.
        node.read_dir(path)
            .map_err(unreadable)?
            .into_iter()
            .filter(|p| {
                node.is_file(p)
                    && p.extension()
                        .and_then(|e| e.to_str())
                        .is_some_and(|e| matches!(e, "json" | "yaml" | "yml"))
            })
            .collect()
    } else {
        vec![path.to_path_buf()]
    };
    let mut providers: Vec<ProviderConfig> = Vec::new();
    for file in files {
        let file_shown = file.display().to_string();
        let text = node
            .read_to_string(&file)
            .map_err(|e| ConfigError::Unreadable {
                path: file_shown.clone(),
                reason: e.to_string(),
            })?;
        for provider in parse_provider_config(&text, &file_shown)? {
            if providers.iter().any(|p| p.name == provider.name) {
                return Err(ConfigError::Duplicate {
                    path: file_shown,
                    name: provider.name,
                });
            }
            providers.push(provider);
        }
    }
    Ok(providers)
}

// ---------------------------------------------------------------------------------------------
// The exec protocol (k/k plugin/plugin.go)

/// The `CredentialProviderRequest` the kubelet writes on the plugin's stdin.
pub fn provider_request(api_version: &str, image: &str) -> String {
    serde_json::json!({
        "apiVersion": api_version,
        "kind": "CredentialProviderRequest",
        "image": image,
    })
    .to_string()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderResponse {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    cache_key_type: String,
    #[serde(default)]
    auth: BTreeMap<String, ProviderAuth>,
}

#[derive(Deserialize)]
struct ProviderAuth {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

/// Decode a plugin's stdout as the kubelet does. The errors never quote the output: it may
/// hold credentials (the kubelet does the same).
pub fn parse_provider_response(
    stdout: &[u8],
    api_version: &str,
) -> Result<Vec<(String, Credentials)>, String> {
    let value: serde_json::Value = serde_json::from_slice(stdout)
        .map_err(|_| "its stdout is not a JSON CredentialProviderResponse".to_string())?;
    let got = value
        .get("apiVersion")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    if got != api_version {
        return Err(format!(
            "apiVersion from credential plugin response did not match expected apiVersion:{api_version}, actual apiVersion:{got}"
        ));
    }
    let response: ProviderResponse = serde_json::from_value(value).map_err(|_| {
        "error decoding credential provider plugin response from stdout".to_string()
    })?;
    if response.kind != "CredentialProviderResponse" {
        return Err(format!(
            "unexpected Kind {:?} (want CredentialProviderResponse)",
            response.kind
        ));
    }
    if !matches!(
        response.cache_key_type.as_str(),
        "Image" | "Registry" | "Global"
    ) {
        return Err(format!(
            "credential provider plugin did not return a valid cacheKeyType: {:?}",
            response.cache_key_type
        ));
    }
    Ok(response
        .auth
        .into_iter()
        .map(|(key, auth)| {
            (
                key,
                Credentials {
                    username: auth.username,
                    password: auth.password,
                },
            )
        })
        .collect())
}

/// A plugin's stderr for the report: the first line(s), shortened, with anything that looks
/// like a secret (long unbroken tokens, `password=…`) replaced.
pub fn redact_stderr(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let mut out: Vec<String> = Vec::new();
    let mut hide_next = false;
    for word in text.split_whitespace() {
        let lower = word.to_ascii_lowercase();
        let secretish = hide_next
            || word.starts_with("eyJ")
            || (word.len() >= 24
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+/=_-.".contains(c)));
        hide_next = lower.ends_with("password:") || lower.ends_with("token:");
        let word = if secretish {
            "<redacted>".to_string()
        } else if let Some((name, _)) = word.split_once('=').filter(|(name, _)| {
            let n = name.to_ascii_lowercase();
            n.contains("pass") || n.contains("token") || n.contains("secret")
        }) {
            format!("{name}=<redacted>")
        } else {
            word.to_string()
        };
        out.push(word);
    }
    let joined = out.join(" ");
    if joined.chars().count() > STDERR_KEPT {
        let cut: String = joined.chars().take(STDERR_KEPT).collect();
        format!("{cut}…")
    } else {
        joined
    }
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
) -> Result<Vec<(String, Credentials)>, String> {
    let binary = bin_dir.join(&provider.name);
    if !node.is_file(&binary) {
        return Err(format!(
            "plugin binary executable {} did not exist (the kubelet would not start)",
            binary.display()
        ));
    }
    let mut command = in_node_root(node, &binary).map_err(|e| {
        format!(
            "cannot run plugin {} inside the node's root: {e}",
            provider.name
        )
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
    let mut child = command.spawn().map_err(|e| {
        format!(
            "error execing credential provider plugin {}: {e}",
            provider.name
        )
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
            return Err(format!(
                "error execing credential provider plugin {} for image {image}: context deadline exceeded (after {})",
                provider.name,
                humantime(timeout)
            ));
        }
    };
    let status = status.map_err(|e| format!("waiting for plugin {}: {e}", provider.name))?;
    if !status.success() {
        let stderr = redact_stderr(&err);
        return Err(format!(
            "error execing credential provider plugin {} for image {image}: {status}{}",
            provider.name,
            if stderr.is_empty() {
                String::new()
            } else {
                format!(": {stderr}")
            }
        ));
    }
    if out.len() as u64 >= MAX_PLUGIN_OUTPUT {
        return Err(format!(
            "plugin {}: stdout exceeds {} bytes",
            provider.name, MAX_PLUGIN_OUTPUT
        ));
    }
    parse_provider_response(&out, &provider.api_version)
        .map_err(|e| format!("plugin {}: {e}", provider.name))
}

/// The hidden subcommand that runs a program inside a node root: `pullpath ROOT_EXEC ROOT
/// PROGRAM ARGS…` chroots into ROOT, changes to its `/` and executes PROGRAM there. A chroot
/// rather than a path prefix because the plugin itself opens node paths (its config file, the
/// node's trust store, its shared libraries), and only the kernel can make all of those the
/// node's. It needs `CAP_SYS_CHROOT` (root in the probe pod).
pub const ROOT_EXEC: &str = "__exec-in-node-root";

/// A command that runs `program` (a node path) as on the node: directly when this is the node,
/// else through this binary's [`ROOT_EXEC`] inside the node root.
pub fn in_node_root(node: &NodeRoot, program: &Path) -> std::io::Result<tokio::process::Command> {
    if node.is_host() {
        return Ok(tokio::process::Command::new(program));
    }
    let mut command = tokio::process::Command::new(std::env::current_exe()?);
    command.arg(ROOT_EXEC).arg(node.mount()).arg(program);
    Ok(command)
}

/// [`ROOT_EXEC`]'s body: chroot into `root`, then replace this process with `program`. Returns
/// only on failure.
pub fn exec_in_root(root: &Path, program: &Path, args: &[std::ffi::OsString]) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    if let Err(e) = std::os::unix::fs::chroot(root).and_then(|()| std::env::set_current_dir("/")) {
        return std::io::Error::new(e.kind(), format!("chroot {}: {e}", root.display()));
    }
    std::process::Command::new(program).args(args).exec()
}

fn humantime(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

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
            let source = Source::PullSecret(path.clone());
            match read_auths(path) {
                Ok(auths) => {
                    for (key, c) in auths {
                        keyring.add(&key, source.clone(), c);
                    }
                }
                // The kubelet's MakeDockerKeyring returns this error: the pull fails outright.
                Err(reason) => evidence.push(SourceEvidence {
                    source,
                    outcome: SourceOutcome::Failed(format!(
                        "{reason} (the kubelet fails the pull on an unparsable pull secret)"
                    )),
                }),
            }
        }
        let found = keyring.lookup(&target);
        for path in &sources.pull_secrets {
            let source = Source::PullSecret(path.clone());
            if evidence.iter().any(|e| e.source == source) {
                continue;
            }
            let mine: Vec<Candidate> = found
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
            let source = Source::NodeConfig(path);
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
            source: Source::NodeConfig(
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
        Err((path, reason)) => evidence.push(SourceEvidence {
            source: Source::NodeConfig(path),
            outcome: SourceOutcome::Failed(reason),
        }),
    }

    // 3. The credential provider plugins: their answers form one keyring.
    let (plugin_candidates, plugin_evidence) = run_providers(sources, &target).await;
    candidates.extend(plugin_candidates);
    evidence.extend(plugin_evidence);

    // containerd's CRI falls back to its own config only when the kubelet sent no credential.
    if let Some(path) = &sources.containerd_config {
        let source = Source::ContainerdConfig(path.clone());
        let outcome = match sources.node.read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                SourceOutcome::Absent(format!("no {}", path.display()))
            }
            Err(e) => SourceOutcome::Failed(format!("cannot read {}: {e}", path.display())),
            Ok(text) => match containerd_registry_auth(&text, &image.registry) {
                Err(why) => SourceOutcome::Failed(format!("{}: {why}", path.display())),
                Ok(None) => SourceOutcome::NoMatch {
                    keys: vec![],
                    near: vec![],
                },
                Ok(Some(_)) if !candidates.is_empty() => SourceOutcome::NotUsed(format!(
                    "registry.configs.\"{}\".auth is there, but containerd uses it only when the kubelet sends no credential",
                    image.registry
                )),
                Ok(Some(credentials)) => {
                    candidates.push(Candidate {
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

/// containerd's deprecated per-registry credential for `host` (its `host:port` exactly, as the
/// CRI plugin looks it up): `[plugins."io.containerd.grpc.v1.cri".registry.configs."HOST".auth]`
/// (containerd 1.x) or `…"io.containerd.cri.v1.images"…` (2.x); `auth` (base64 `user:password`)
/// overrides `username`/`password` (containerd `docs/cri/registry.md`). An `identitytoken` alone
/// is an OAuth refresh token, which the probe cannot present: an error saying so.
pub fn containerd_registry_auth(text: &str, host: &str) -> Result<Option<Credentials>, String> {
    let config: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("not TOML ({})", e.message()))?;
    let plugins = config.get("plugins").and_then(toml::Value::as_table);
    let auth = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images"]
        .iter()
        .find_map(|plugin| {
            plugins?
                .get(*plugin)?
                .get("registry")?
                .get("configs")?
                .get(host)?
                .get("auth")?
                .as_table()
        });
    let Some(auth) = auth else {
        return Ok(None);
    };
    let field = |name: &str| {
        auth.get(name)
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let encoded = field("auth");
    if !encoded.is_empty() {
        let entry = serde_json::json!({ "auth": encoded });
        let mut found =
            creds::parse_auths(&serde_json::json!({ "auths": { host: entry } }).to_string())
                .map_err(|e| e.to_string())?;
        return Ok(found.pop().map(|(_, c)| c));
    }
    let (username, password) = (field("username"), field("password"));
    if username.is_empty() && password.is_empty() && !field("identitytoken").is_empty() {
        return Err(
            "only an identitytoken, which containerd sends as an OAuth refresh token; the probe cannot present one yet".into(),
        );
    }
    Ok(Some(Credentials { username, password }))
}

fn shown_dirs(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn read_auths(path: &Path) -> Result<Vec<(String, Credentials)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    creds::parse_auths(&text).map_err(|e| format!("{}: {e}", path.display()))
}

type NodeConfig = (PathBuf, Vec<(String, Credentials)>);

/// The kubelet's `ReadDockerConfigFile`: config.json along its paths, then `.dockercfg`; an
/// invalid file is passed over (the kubelet logs it and looks further).
fn read_node_config(
    node: &NodeRoot,
    search: &NodeConfigSearch,
) -> Result<Option<NodeConfig>, (PathBuf, String)> {
    let mut first_invalid = None;
    let candidates = search
        .config_json_dirs
        .iter()
        .map(|d| (d.join("config.json"), true))
        .chain(
            search
                .dockercfg_dirs
                .iter()
                .map(|d| (d.join(".dockercfg"), false)),
        );
    for (path, is_json) in candidates {
        let Ok(text) = node.read_to_string(&path) else {
            continue;
        };
        let parsed = if is_json {
            creds::parse_auths(&text)
        } else {
            // `.dockercfg` is the bare map of entries.
            creds::parse_auths(&format!(r#"{{"auths":{text}}}"#))
        };
        match parsed {
            Ok(auths) => return Ok(Some((path, auths))),
            Err(e) => {
                first_invalid.get_or_insert((path.clone(), format!("{}: {e}", path.display())));
            }
        }
    }
    match first_invalid {
        Some(invalid) => Err(invalid),
        None => Ok(None),
    }
}

async fn run_providers(sources: &Sources, target: &str) -> (Vec<Candidate>, Vec<SourceEvidence>) {
    let mut evidence = Vec::new();
    let Some(config_path) = &sources.provider_config else {
        evidence.push(SourceEvidence {
            source: Source::Provider("(none)".into()),
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
                source: Source::Provider(config_path.display().to_string()),
                outcome: SourceOutcome::Failed(format!("{e} (the kubelet would not start)")),
            });
            return (Vec::new(), evidence);
        }
    };
    let Some(bin_dir) = &sources.provider_bin_dir else {
        evidence.push(SourceEvidence {
            source: Source::Provider(config_path.display().to_string()),
            outcome: SourceOutcome::Failed(
                "no --image-credential-provider-bin-dir: the kubelet refuses a provider config without one".into(),
            ),
        });
        return (Vec::new(), evidence);
    };
    let mut keyring = Keyring::default();
    for provider in &providers {
        let source = Source::Provider(provider.name.clone());
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
            Err(reason) => evidence.push(SourceEvidence {
                source,
                outcome: SourceOutcome::Failed(reason),
            }),
        }
    }
    (keyring.lookup(target), evidence)
}

#[cfg(test)]
mod tests;
