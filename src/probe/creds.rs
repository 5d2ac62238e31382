//! Credentials for the probe: anonymous, `--username` with `--password-stdin`, or a docker
//! `config.json` / Kubernetes `dockerconfigjson` Secret. Never printed: `Debug` redacts.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::credentials::Credentials;

#[derive(Debug, thiserror::Error)]
pub enum CredsError {
    #[error("the docker config is not JSON: {0}")]
    NotJson(String),
    #[error("the docker config has no `auths` (nor a Secret's .dockerconfigjson)")]
    NoAuths,
    #[error("the credentials for {0} do not decode (auth is not base64 of user:password)")]
    Malformed(String),
}

/// Every `auths` entry of a docker config.json, a dockerconfigjson Secret (`.dockerconfigjson`)
/// or a legacy dockercfg Secret (`.dockercfg`, the map itself), in file order, read as the
/// kubelet reads them (k/k `pkg/credentialprovider/config.go`, `DockerConfigEntry.UnmarshalJSON`):
/// `username`/`password`, overridden by `auth` when present; `identitytoken`, `registrytoken`,
/// `credsStore` and `credHelpers` are not read, so an entry holding only those is empty.
pub fn parse_auths(text: &str) -> Result<Vec<(String, Credentials)>, CredsError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| CredsError::NotJson(e.to_string()))?;
    let decode_data = |key: &str| -> Result<Option<Value>, CredsError> {
        let Some(encoded) = value
            .pointer(&format!("/data/{key}"))
            .and_then(Value::as_str)
        else {
            return Ok(None);
        };
        let decoded = STANDARD
            .decode(encoded.trim())
            .map_err(|_| CredsError::Malformed(key.into()))?;
        serde_json::from_slice::<Value>(&decoded)
            .map(Some)
            .map_err(|e| CredsError::NotJson(e.to_string()))
    };
    let auths = if let Some(config) = decode_data(".dockerconfigjson")? {
        config.get("auths").cloned()
    } else if let Some(legacy) = decode_data(".dockercfg")? {
        Some(legacy)
    } else {
        value.get("auths").cloned()
    };
    let auths = auths
        .as_ref()
        .and_then(Value::as_object)
        .ok_or(CredsError::NoAuths)?;
    auths
        .iter()
        .map(|(key, entry)| Ok((key.clone(), entry_credentials(key, entry)?)))
        .collect()
}

fn entry_credentials(key: &str, entry: &Value) -> Result<Credentials, CredsError> {
    let field = |name: &str| {
        entry
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let auth = field("auth");
    if auth.is_empty() {
        return Ok(Credentials {
            username: field("username"),
            password: field("password"),
        });
    }
    let malformed = || CredsError::Malformed(key.to_string());
    let decoded = STANDARD.decode(auth.trim()).map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (u, p) = decoded.split_once(':').ok_or_else(malformed)?;
    Ok(Credentials {
        username: u.into(),
        password: p.into(),
    })
}

/// Find the credentials for `registry` in a docker config or a dockerconfigjson Secret.
/// `Ok(None)` when the file holds no entry for that registry.
pub fn from_docker_config(text: &str, registry: &str) -> Result<Option<Credentials>, CredsError> {
    let wanted: Vec<String> = if registry == "docker.io" {
        vec![
            "https://index.docker.io/v1/".into(),
            "index.docker.io".into(),
            "docker.io".into(),
            "registry-1.docker.io".into(),
        ]
    } else {
        vec![registry.to_string()]
    };
    let found = parse_auths(text)?.into_iter().find(|(key, _)| {
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        let host = host.split('/').next().unwrap_or(host);
        wanted.iter().any(|w| w == key || w == host)
    });
    Ok(found.map(|(_, credentials)| credentials))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_config_json_and_secrets() {
        let auth = STANDARD.encode("alice:s3cret");
        let config =
            format!(r#"{{"auths":{{"https://registry.example.test":{{"auth":"{auth}"}}}}}}"#);
        let creds = from_docker_config(&config, "registry.example.test")
            .expect("parses")
            .expect("entry");
        assert_eq!(
            (creds.username.as_str(), creds.password.as_str()),
            ("alice", "s3cret")
        );
        assert!(!format!("{creds:?}").contains("s3cret"));
        let secret = format!(
            r#"{{"kind":"Secret","data":{{".dockerconfigjson":"{}"}}}}"#,
            STANDARD.encode(&config)
        );
        assert_eq!(
            from_docker_config(&secret, "registry.example.test").expect("parses"),
            Some(creds)
        );
        assert_eq!(
            from_docker_config(&config, "other.example").expect("parses"),
            None
        );
        assert!(matches!(
            from_docker_config("nope", "x"),
            Err(CredsError::NotJson(_))
        ));
    }
}
