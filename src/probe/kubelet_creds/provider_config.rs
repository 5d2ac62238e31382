//! The kubelet's `CredentialProviderConfig` (k/k `plugin/config.go`), read and validated as
//! the kubelet does, so a config the kubelet would refuse to start with is named as such.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::exec_protocol::PROVIDER_API_V1;
use crate::node_root::NodeRoot;

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
pub enum ProviderConfigError {
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path} is not a CredentialProviderConfig: {reason}")]
    Invalid { path: String, reason: String },
    #[error("duplicate provider name {name:?} in {path}")]
    Duplicate { path: String, name: String },
}

/// Parse one config file's text (YAML or JSON), validated as the kubelet validates it.
pub fn parse_provider_config(
    text: &str,
    path: &str,
) -> Result<Vec<ProviderConfig>, ProviderConfigError> {
    let invalid = |reason: String| ProviderConfigError::Invalid {
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
) -> Result<Vec<ProviderConfig>, ProviderConfigError> {
    let shown = path.display().to_string();
    let unreadable = |e: std::io::Error| ProviderConfigError::Unreadable {
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
            .map_err(|e| ProviderConfigError::Unreadable {
                path: file_shown.clone(),
                reason: e.to_string(),
            })?;
        for provider in parse_provider_config(&text, &file_shown)? {
            if providers.iter().any(|p| p.name == provider.name) {
                return Err(ProviderConfigError::Duplicate {
                    path: file_shown,
                    name: provider.name,
                });
            }
            providers.push(provider);
        }
    }
    Ok(providers)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: acr-credential-provider
  matchImages: ["*.azurecr.io", "registry.io:8080/path"]
  defaultCacheDuration: "10m"
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [/etc/kubernetes/azure.json]
  env: [{name: A, value: b}]
"#;

    #[test]
    fn provider_config_parses_and_validates() {
        let providers = parse_provider_config(CONFIG, "c.yaml").expect("valid");
        assert_eq!(providers.len(), 1);
        assert_eq!(providers[0].name, "acr-credential-provider");
        assert_eq!(providers[0].args, ["/etc/kubernetes/azure.json"]);
        assert_eq!(providers[0].env[0].name, "A");
        let invalid = [
            CONFIG.replace("kubelet.config.k8s.io/v1", "v1"),
            CONFIG.replace("kind: CredentialProviderConfig", "kind: Pod"),
            CONFIG.replace("  defaultCacheDuration: \"10m\"\n", ""),
            CONFIG.replace("credentialprovider.kubelet.k8s.io/v1", "nope/v1"),
            CONFIG.replace("name: acr-credential-provider", "name: ../x"),
            "providers: [".to_string(),
            // A parser's "invalid type: string \"hunter2\"" must not carry the value out.
            CONFIG.replace("args: [/etc/kubernetes/azure.json]", "args: hunter2"),
        ];
        for text in invalid {
            let result = parse_provider_config(&text, "c.yaml");
            assert!(
                matches!(result, Err(ProviderConfigError::Invalid { .. })),
                "{text}"
            );
            assert!(!format!("{result:?}").contains("hunter2"), "{result:?}");
        }
    }

    #[test]
    fn provider_config_directory_merges_in_order_and_rejects_duplicates() {
        let dir = std::env::temp_dir().join(format!("pullpath-cpc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(
            dir.join("b.yaml"),
            CONFIG.replace("acr-credential", "second"),
        )
        .expect("b");
        std::fs::write(dir.join("a.yaml"), CONFIG).expect("a");
        std::fs::write(dir.join("notes.txt"), "ignored").expect("txt");
        let names: Vec<String> = read_provider_config(&crate::node_root::NodeRoot::host(), &dir)
            .expect("merged")
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(names, ["acr-credential-provider", "second-provider"]);
        std::fs::write(dir.join("c.yml"), CONFIG).expect("c");
        assert!(matches!(
            read_provider_config(&crate::node_root::NodeRoot::host(), &dir),
            Err(ProviderConfigError::Duplicate { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
