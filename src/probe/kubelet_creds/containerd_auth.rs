//! containerd's own deprecated per-registry credential, the CRI's fallback when the kubelet
//! sends none, read from its config.toml.

use crate::credentials::Credentials;
use crate::probe::creds::{self, CredsError};

/// Why containerd's config gives no usable credential for the host.
#[derive(Debug, thiserror::Error)]
pub enum ContainerdAuthProblem {
    /// toml's message only: its full form quotes the line, which may hold a password.
    #[error("not TOML ({})", .0.message())]
    NotToml(toml::de::Error),
    /// The `auth` field does not decode.
    #[error("{0}")]
    Auth(CredsError),
    #[error(
        "only an identitytoken, which containerd sends as an OAuth refresh token; the probe cannot present one yet"
    )]
    IdentityTokenOnly,
}

/// containerd's deprecated per-registry credential for `host` (its `host:port` exactly, as the
/// CRI plugin looks it up): `[plugins."io.containerd.grpc.v1.cri".registry.configs."HOST".auth]`
/// (containerd 1.x) or `…"io.containerd.cri.v1.images"…` (2.x); `auth` (base64 `user:password`)
/// overrides `username`/`password` (containerd `docs/cri/registry.md`). An `identitytoken` alone
/// is an OAuth refresh token, which the probe cannot present: an error saying so.
pub fn containerd_registry_auth(
    text: &str,
    host: &str,
) -> Result<Option<Credentials>, ContainerdAuthProblem> {
    let config: toml::Table = text.parse().map_err(ContainerdAuthProblem::NotToml)?;
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
                .map_err(ContainerdAuthProblem::Auth)?;
        return Ok(found.pop().map(|(_, c)| c));
    }
    let (username, password) = (field("username"), field("password"));
    if username.is_empty() && password.is_empty() && !field("identitytoken").is_empty() {
        return Err(ContainerdAuthProblem::IdentityTokenOnly);
    }
    Ok(Some(Credentials { username, password }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containerd_registry_auth_is_read_for_the_exact_host() {
        let v1 = r#"
version = 2
[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.io:5000".auth]
  username = "ci"
  password = "hunter2"
[plugins."io.containerd.grpc.v1.cri".registry.configs."gcr.io".auth]
  auth = "dTpwdw=="
  username = "ignored"
[plugins."io.containerd.grpc.v1.cri".registry.configs."token.io".auth]
  identitytoken = "hunter2"
"#;
        let found = containerd_registry_auth(v1, "registry.io:5000").expect("parses");
        assert_eq!(found.map(|c| c.username).as_deref(), Some("ci"));
        assert_eq!(
            containerd_registry_auth(v1, "registry.io").expect("parses"),
            None
        );
        let overridden = containerd_registry_auth(v1, "gcr.io")
            .expect("parses")
            .expect("entry");
        assert_eq!(
            (overridden.username.as_str(), overridden.password.as_str()),
            ("u", "pw")
        );
        let token = containerd_registry_auth(v1, "token.io").expect_err("identity token");
        assert!(
            matches!(token, ContainerdAuthProblem::IdentityTokenOnly),
            "{token:?}"
        );
        let v2 = r#"
version = 3
[plugins."io.containerd.cri.v1.images".registry.configs."registry.io".auth]
  username = "two"
  password = "hunter2"
"#;
        let found = containerd_registry_auth(v2, "registry.io").expect("parses");
        assert_eq!(found.map(|c| c.username).as_deref(), Some("two"));
        let bad = containerd_registry_auth("password = \"hunter2", "x").expect_err("not TOML");
        assert!(matches!(bad, ContainerdAuthProblem::NotToml(_)), "{bad:?}");
        // What a user reads never quotes the file.
        assert!(!bad.to_string().contains("hunter2"), "{bad}");
    }
}
