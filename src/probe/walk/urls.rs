//! The registry API's URLs as containerd builds them from a `hosts.toml` host: its scheme, port
//! and path, and `?ns=` when a mirror serves another registry's repository.

use url::Url;

use super::Walk;
use crate::probe::authority::Authority;
use crate::probe::evidence::{ConfigProblem, Evidence};
use crate::probe::net::Network;
use crate::probe::step::Step;
use crate::probe::stop::Stop;

impl<N: Network> Walk<N> {
    /// `scheme://host/v2/<repository>/<kind>/<reference>`, with `?ns=` for a mirror as
    /// containerd adds it (`dockerBase.request`, `addNamespace`).
    pub(super) fn api_url(&self, i: usize, kind: &str, reference: &str) -> Result<Url, Stop> {
        let repository = &self.settings.image.repository;
        self.base_url(i, &format!("/{repository}/{kind}/{reference}"))
    }

    pub(super) fn base_url(&self, i: usize, rest: &str) -> Result<Url, Stop> {
        let endpoint = &self.endpoints[i].config;
        let scheme = endpoint.scheme;
        let text = format!(
            "{}://{}{}{rest}",
            scheme.as_str(),
            endpoint.authority.for_url(scheme),
            endpoint.path
        );
        let mut url = Url::parse(&text).map_err(|e| {
            let hop = self.endpoints[i].hop();
            let problem = ConfigProblem::BadPath {
                url: text.clone(),
                error: e.to_string(),
            };
            let problem = Evidence::Config(problem);
            Stop::new(hop, &endpoint.authority, Step::HostsToml, problem)
        })?;
        let registry = &self.settings.image.registry;
        if rest != "/" && Authority::parse(registry, 443).as_ref() != Some(&endpoint.authority) {
            url.query_pairs_mut().append_pair("ns", registry);
        }
        Ok(url)
    }
}
