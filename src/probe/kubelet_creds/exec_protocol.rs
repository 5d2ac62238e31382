//! The exec protocol's two messages (k/k `plugin/plugin.go`): the request the kubelet writes and
//! the response it accepts, checked without ever quoting what may be a credential.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::credentials::Credentials;

/// The request and response API the exec protocol speaks.
pub const PROVIDER_API_V1: &str = "credentialprovider.kubelet.k8s.io/v1";

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

/// Why a plugin's response is refused, in the kubelet's words. No variant holds the output or
/// serde's error about it: either may quote a credential (the kubelet does the same).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseProblem {
    #[error("its stdout is not a JSON CredentialProviderResponse")]
    NotJson,
    #[error(
        "apiVersion from credential plugin response did not match expected apiVersion:{expected}, actual apiVersion:{got}"
    )]
    ApiVersion { expected: String, got: String },
    #[error("error decoding credential provider plugin response from stdout")]
    Undecodable,
    #[error("unexpected Kind {kind:?} (want CredentialProviderResponse)")]
    Kind { kind: String },
    #[error("credential provider plugin did not return a valid cacheKeyType: {cache_key_type:?}")]
    CacheKeyType { cache_key_type: String },
}

/// Decode a plugin's stdout as the kubelet does.
pub fn parse_provider_response(
    stdout: &[u8],
    api_version: &str,
) -> Result<Vec<(String, Credentials)>, ResponseProblem> {
    let value: serde_json::Value =
        serde_json::from_slice(stdout).map_err(|_| ResponseProblem::NotJson)?;
    let got = value
        .get("apiVersion")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    if got != api_version {
        return Err(ResponseProblem::ApiVersion {
            expected: api_version.to_string(),
            got: got.to_string(),
        });
    }
    let response: ProviderResponse =
        serde_json::from_value(value).map_err(|_| ResponseProblem::Undecodable)?;
    if response.kind != "CredentialProviderResponse" {
        return Err(ResponseProblem::Kind {
            kind: response.kind,
        });
    }
    if !matches!(
        response.cache_key_type.as_str(),
        "Image" | "Registry" | "Global"
    ) {
        return Err(ResponseProblem::CacheKeyType {
            cache_key_type: response.cache_key_type,
        });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image_ref::ImageRef;
    use crate::keyring::lookup_image;

    #[test]
    fn provider_responses_are_checked_without_quoting_them() {
        let good = br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","auth":{"*.azurecr.io":{"username":"u","password":"hunter2"}}}"#;
        let auths = parse_provider_response(good, PROVIDER_API_V1).expect("valid");
        assert_eq!(auths[0].0, "*.azurecr.io");
        assert_eq!(auths[0].1.password, "hunter2");
        let bad: [&[u8]; 4] = [
        b"hunter2 not json",
        br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","kind":"CredentialProviderResponse","cacheKeyType":"Image","auth":{"x":{"password":"hunter2"}}}"#,
        br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Forever","auth":{"x":{"password":"hunter2"}}}"#,
        br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Image","auth":{"x":"hunter2"}}"#,
    ];
        let refused =
            bad.map(|out| parse_provider_response(out, PROVIDER_API_V1).expect_err("rejected"));
        assert_eq!(
            refused,
            [
                ResponseProblem::NotJson,
                ResponseProblem::ApiVersion {
                    expected: PROVIDER_API_V1.into(),
                    got: "credentialprovider.kubelet.k8s.io/v1beta1".into()
                },
                ResponseProblem::CacheKeyType {
                    cache_key_type: "Forever".into()
                },
                ResponseProblem::Undecodable,
            ]
        );
        // What a user reads never quotes the output.
        for problem in refused {
            assert!(!problem.to_string().contains("hunter2"), "{problem}");
        }
    }

    #[test]
    fn the_request_names_the_repository() {
        let image = ImageRef::parse("registry.io:5000/team/app:v1").expect("ref");
        let request: serde_json::Value =
            serde_json::from_str(&provider_request(PROVIDER_API_V1, &lookup_image(&image)))
                .expect("json");
        assert_eq!(request["image"], "registry.io:5000/team/app");
        assert_eq!(request["kind"], "CredentialProviderRequest");
        assert_eq!(request["apiVersion"], PROVIDER_API_V1);
    }
}
