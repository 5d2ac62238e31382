//! Which pull-secret entries the kubelet would use for an image: the registry keys of a pod's
//! imagePullSecrets, matched by the one keyring (`crate::keyring`, the kubelet's rules).
//! Only the `auths` keys are read; values are never kept.

use serde_json::Value;

use crate::image_ref::ImageRef;

/// Why a pull secret holds no registry entry the kubelet reads. No variant keeps the secret's
/// bytes or serde's words about them: both could quote a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoRegistryKeys {
    #[error("type {secret_type} holds no registry credentials")]
    NotDockerConfig { secret_type: String },
    #[error("no {field} key")]
    NoField { field: &'static str },
    #[error("{field} is not JSON")]
    NotJson { field: &'static str },
    #[error("{field} has no auths")]
    NoAuths { field: &'static str },
}

/// The registry keys of a `kubernetes.io/dockerconfigjson` (`.dockerconfigjson`, `{"auths":…}`)
/// or `kubernetes.io/dockercfg` (`.dockercfg`, the map itself) Secret's data (decoded bytes).
/// The entries' values are dropped here.
pub fn registry_keys(
    secret_type: &str,
    data: &[(String, Vec<u8>)],
) -> Result<Vec<String>, NoRegistryKeys> {
    let (field, nested) = match secret_type {
        "kubernetes.io/dockerconfigjson" => (".dockerconfigjson", true),
        "kubernetes.io/dockercfg" => (".dockercfg", false),
        other => {
            return Err(NoRegistryKeys::NotDockerConfig {
                secret_type: other.to_string(),
            });
        }
    };
    let Some((_, bytes)) = data.iter().find(|(k, _)| k == field) else {
        return Err(NoRegistryKeys::NoField { field });
    };
    let value: Value =
        serde_json::from_slice(bytes).map_err(|_| NoRegistryKeys::NotJson { field })?;
    let map = if nested { &value["auths"] } else { &value };
    let keys = map
        .as_object()
        .ok_or(NoRegistryKeys::NoAuths { field })?
        .keys()
        .cloned()
        .collect();
    Ok(keys)
}

/// The entries of one secret the kubelet would pass for `image`, in the order it tries them
/// (the one keyring's order: the most specific key first).
pub fn matching_keys<'k>(keys: &'k [String], image: &ImageRef) -> Vec<&'k String> {
    crate::keyring::lookup_order(keys, &crate::keyring::lookup_image(image))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyring::key_covers as key_matches;

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
        // A string prefix, as the kubelet's keyring (this keyring used to want a whole segment).
        assert!(key_matches("shopacr.azurecr.io/sh", &acr));
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
    fn the_most_specific_entry_is_named_first_whatever_the_secrets_order() {
        let keys = vec![
            "shopacr.azurecr.io".to_string(),
            "shopacr.azurecr.io/shop/web".to_string(),
            "shopacr.azurecr.io/shop".to_string(),
        ];
        let acr = image("shopacr.azurecr.io/shop/web:2.4.1");
        assert_eq!(
            matching_keys(&keys, &acr),
            [
                "shopacr.azurecr.io/shop/web",
                "shopacr.azurecr.io/shop",
                "shopacr.azurecr.io"
            ]
        );
        let hub = image("nginx:1.25");
        let hub_keys = vec![
            "https://index.docker.io/v1/".to_string(),
            "docker.io".to_string(),
        ];
        assert_eq!(matching_keys(&hub_keys, &hub), ["docker.io"]);
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
        assert_eq!(
            registry_keys("Opaque", &data),
            Err(NoRegistryKeys::NotDockerConfig {
                secret_type: "Opaque".into()
            })
        );
        assert_eq!(
            registry_keys(
                "kubernetes.io/dockerconfigjson",
                &[(".dockerconfigjson".into(), b"!!".to_vec())]
            ),
            Err(NoRegistryKeys::NotJson {
                field: ".dockerconfigjson"
            })
        );
        assert_eq!(
            registry_keys("kubernetes.io/dockercfg", &data),
            Err(NoRegistryKeys::NoField {
                field: ".dockercfg"
            })
        );
        assert_eq!(
            registry_keys(
                "kubernetes.io/dockerconfigjson",
                &[(".dockerconfigjson".into(), b"{}".to_vec())]
            ),
            Err(NoRegistryKeys::NoAuths {
                field: ".dockerconfigjson"
            })
        );
    }
}
