//! A registry credential: a user name and its secret, as the kubelet passes it to the runtime
//! and the probe sends it. Below `runtime` and `probe`, which both carry it. Never printed:
//! `Debug` redacts.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

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
