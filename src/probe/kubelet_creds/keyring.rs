//! The kubelet's `BasicDockerKeyring`: which stored entries answer an image, most specific
//! first, so the credentials are tried in the order the kubelet tries them.

use std::collections::BTreeMap;

use super::{CredentialSource, MatchedCredential, SourceOutcome};
use crate::credentials::Credentials;
use crate::keyring::{lookup_order, near_miss, normalize_key};

/// The kubelet's `BasicDockerKeyring`: entries under normalized keys; lookup walks the keys
/// reverse-sorted, so `quay.io/team` comes before `quay.io`.
#[derive(Debug, Default, Clone)]
pub struct Keyring {
    pub(super) entries: BTreeMap<String, Vec<MatchedCredential>>,
}

impl Keyring {
    pub fn add(&mut self, location: &str, source: CredentialSource, credentials: Credentials) {
        let key = normalize_key(location);
        self.entries
            .entry(key.clone())
            .or_default()
            .push(MatchedCredential {
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
    pub fn lookup(&self, image: &str) -> Vec<MatchedCredential> {
        let keys: Vec<&String> = self.entries.keys().collect();
        lookup_order(&keys, image)
            .into_iter()
            .flat_map(|key| self.entries.get(*key).into_iter().flatten().cloned())
            .collect()
    }

    /// The evidence of a lookup in this keyring.
    pub(super) fn outcome(&self, image: &str, found: &[MatchedCredential]) -> SourceOutcome {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(user: &str) -> Credentials {
        Credentials {
            username: user.into(),
            password: format!("pw-{user}"),
        }
    }

    #[test]
    fn lookup_returns_every_match_most_specific_first() {
        let mut keyring = Keyring::default();
        let s = CredentialSource::PullSecret("a.json".into());
        keyring.add("quay.io", s.clone(), cred("host"));
        keyring.add("https://quay.io/team", s.clone(), cred("team"));
        keyring.add("*.quay.io", s.clone(), cred("glob"));
        keyring.add("quay.io/team/app", s.clone(), cred("app"));
        keyring.add("other.io", s.clone(), cred("other"));
        let users: Vec<String> = keyring
            .lookup("quay.io/team/app")
            .into_iter()
            .map(|c| c.credentials.username)
            .collect();
        assert_eq!(users, ["app", "team", "host"]);
        assert!(keyring.lookup("registry.io/x").is_empty());
    }

    #[test]
    fn docker_hub_falls_back_to_index_docker_io() {
        let mut keyring = Keyring::default();
        keyring.add(
            "https://index.docker.io/v1/",
            CredentialSource::NodeConfig("config.json".into()),
            cred("hub"),
        );
        assert_eq!(keyring.lookup("docker.io/library/nginx").len(), 1);
        assert!(keyring.lookup("registry.io/library/nginx").is_empty());
    }
}
