//! Which pull-secret entries the kubelet would use for an image: its keyring rules
//! (kubernetes `pkg/credentialprovider/keyring.go`, `config.go`), as pure functions.
//!
//! A key is a URL with the scheme stripped (`https://r.example/v1/` → `r.example`), its host may
//! hold `*` globs (one per DNS label), its port must equal the image's, and its path must be a
//! prefix of the image's repository path. Docker Hub images also match the `index.docker.io`
//! keys. Only the `auths` keys are read; values are never kept.

use serde_json::Value;

use crate::image_ref::ImageRef;

/// The registry keys of a `kubernetes.io/dockerconfigjson` (`.dockerconfigjson`, `{"auths":…}`)
/// or `kubernetes.io/dockercfg` (`.dockercfg`, the map itself) Secret's data (decoded bytes).
/// The entries' values are dropped here.
pub fn registry_keys(secret_type: &str, data: &[(String, Vec<u8>)]) -> Result<Vec<String>, String> {
    let (field, nested) = match secret_type {
        "kubernetes.io/dockerconfigjson" => (".dockerconfigjson", true),
        "kubernetes.io/dockercfg" => (".dockercfg", false),
        other => return Err(format!("type {other} holds no registry credentials")),
    };
    let Some((_, bytes)) = data.iter().find(|(k, _)| k == field) else {
        return Err(format!("no {field} key"));
    };
    let value: Value = serde_json::from_slice(bytes).map_err(|_| format!("{field} is not JSON"))?;
    let map = if nested { &value["auths"] } else { &value };
    let keys = map
        .as_object()
        .ok_or_else(|| format!("{field} has no auths"))?
        .keys()
        .cloned()
        .collect();
    Ok(keys)
}

/// `https://r.example:5000/v2/team` → (`r.example`, `5000`, `team`).
fn parse_key(key: &str) -> (String, String, String) {
    let rest = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let path = path
        .strip_prefix("v1/")
        .or_else(|| path.strip_prefix("v2/"))
        .unwrap_or(path);
    let path = if path == "v1" || path == "v2" {
        ""
    } else {
        path
    };
    let (host, port) = authority.rsplit_once(':').unwrap_or((authority, ""));
    (
        host.to_ascii_lowercase(),
        port.to_string(),
        path.trim_end_matches('/').to_string(),
    )
}

/// One label glob: `*` matches any run of characters within the label.
fn label_matches(pattern: &str, label: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == label,
        Some((prefix, rest)) => {
            label.starts_with(prefix)
                && (0..=label.len() - prefix.len()).any(|skip| {
                    let tail = &label[prefix.len() + skip..];
                    label.is_char_boundary(prefix.len() + skip) && label_matches(rest, tail)
                })
        }
    }
}

/// Whether the kubelet would use entry `key` for `image`.
pub fn key_matches(key: &str, image: &ImageRef) -> bool {
    let (host, port, path) = parse_key(key);
    let registries: Vec<String> = if image.registry == "docker.io" {
        vec![
            "docker.io".into(),
            "index.docker.io".into(),
            "registry-1.docker.io".into(),
        ]
    } else {
        vec![image.registry.to_ascii_lowercase()]
    };
    registries.iter().any(|registry| {
        let (image_host, image_port) = registry.rsplit_once(':').unwrap_or((registry, ""));
        let labels: Vec<&str> = host.split('.').collect();
        let image_labels: Vec<&str> = image_host.split('.').collect();
        labels.len() == image_labels.len()
            && labels
                .iter()
                .zip(&image_labels)
                .all(|(p, l)| label_matches(p, l))
            && port == image_port
            && (path.is_empty()
                || image.repository == path
                || image.repository.starts_with(&format!("{path}/")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(text: &str) -> ImageRef {
        ImageRef::parse(text).expect("image")
    }

    #[test]
    fn the_kubelets_matching_rules() {
        let acr = image("shopacr.azurecr.io/shop/web:2.4.1");
        assert!(key_matches("shopacr.azurecr.io", &acr));
        assert!(key_matches("https://shopacr.azurecr.io/v2/", &acr));
        assert!(key_matches("*.azurecr.io", &acr));
        assert!(key_matches("shopacr.azurecr.io/shop", &acr));
        assert!(!key_matches("shopacr.azurecr.io/billing", &acr));
        assert!(
            !key_matches("shopacr.azurecr.io:443", &acr),
            "the port must match"
        );
        assert!(!key_matches("ghcr.io", &acr));
        assert!(!key_matches("*.io", &acr), "one glob matches one label");
        let hub = image("nginx:1.25");
        assert!(key_matches("https://index.docker.io/v1/", &hub));
        assert!(key_matches("docker.io", &hub));
        let port = image("r.example:5000/app:1");
        assert!(key_matches("r.example:5000", &port));
        assert!(!key_matches("r.example", &port));
    }

    #[test]
    fn only_the_keys_of_a_secret_are_read() {
        let config = r#"{"auths":{"ghcr.io":{"auth":"Ym90OnMzY3JldA=="}}}"#;
        let data = vec![(".dockerconfigjson".to_string(), config.as_bytes().to_vec())];
        assert_eq!(
            registry_keys("kubernetes.io/dockerconfigjson", &data),
            Ok(vec!["ghcr.io".to_string()])
        );
        let legacy = vec![(
            ".dockercfg".to_string(),
            br#"{"r.example":{"auth":"eDp5"}}"#.to_vec(),
        )];
        assert_eq!(
            registry_keys("kubernetes.io/dockercfg", &legacy),
            Ok(vec!["r.example".to_string()])
        );
        assert!(registry_keys("Opaque", &data).is_err());
        assert!(
            registry_keys(
                "kubernetes.io/dockerconfigjson",
                &[(".dockerconfigjson".into(), b"!!".to_vec())]
            )
            .is_err()
        );
    }
}
