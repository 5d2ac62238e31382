//! Credentials for the probe: anonymous, `--username` with `--password-stdin`, or a docker
//! `config.json` / Kubernetes `dockerconfigjson` Secret. Never printed: `Debug` redacts.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Credentials {{ username: {:?}, password: <redacted> }}",
            self.username
        )
    }
}

impl Credentials {
    /// The `Authorization: Basic …` value.
    pub fn basic(&self) -> String {
        format!(
            "Basic {}",
            STANDARD.encode(format!("{}:{}", self.username, self.password))
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CredsError {
    #[error("the docker config is not JSON: {0}")]
    NotJson(String),
    #[error("the docker config has no `auths` (nor a Secret's .dockerconfigjson)")]
    NoAuths,
    #[error("the credentials for {0} do not decode (auth is not base64 of user:password)")]
    Malformed(String),
}

/// Find the credentials for `registry` in a docker config or a dockerconfigjson Secret.
/// `Ok(None)` when the file holds no entry for that registry.
pub fn from_docker_config(text: &str, registry: &str) -> Result<Option<Credentials>, CredsError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| CredsError::NotJson(e.to_string()))?;
    let config = match value
        .pointer("/data/.dockerconfigjson")
        .and_then(Value::as_str)
    {
        Some(encoded) => {
            let decoded = STANDARD
                .decode(encoded.trim())
                .map_err(|_| CredsError::Malformed(".dockerconfigjson".into()))?;
            serde_json::from_slice::<Value>(&decoded)
                .map_err(|e| CredsError::NotJson(e.to_string()))?
        }
        None => value,
    };
    let auths = config
        .get("auths")
        .and_then(Value::as_object)
        .ok_or(CredsError::NoAuths)?;
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
    let entry = auths.iter().find(|(key, _)| {
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        let host = host.split('/').next().unwrap_or(host);
        wanted.iter().any(|w| w == *key || w == host)
    });
    let Some((key, entry)) = entry else {
        return Ok(None);
    };
    if let (Some(u), Some(p)) = (
        entry.get("username").and_then(Value::as_str),
        entry.get("password").and_then(Value::as_str),
    ) {
        return Ok(Some(Credentials {
            username: u.into(),
            password: p.into(),
        }));
    }
    let auth = entry
        .get("auth")
        .and_then(Value::as_str)
        .ok_or_else(|| CredsError::Malformed(key.clone()))?;
    let decoded = STANDARD
        .decode(auth.trim())
        .map_err(|_| CredsError::Malformed(key.clone()))?;
    let decoded = String::from_utf8(decoded).map_err(|_| CredsError::Malformed(key.clone()))?;
    let (u, p) = decoded
        .split_once(':')
        .ok_or_else(|| CredsError::Malformed(key.clone()))?;
    Ok(Some(Credentials {
        username: u.into(),
        password: p.into(),
    }))
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
