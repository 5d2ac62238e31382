//! containerd's host order: which hosts a resolve asks and which a fetch asks, what a 404 or a
//! failure on one host means for the next, and how a manifest answer is read.

use super::{FallbackTo, RANGE_BYTES, Walk};
use crate::image_ref::Digest;
use crate::probe::authority::Authority;
use crate::probe::evidence::{ConfigProblem, Evidence};
use crate::probe::net::{Network, Response};
use crate::probe::oci::{self, Descriptor, MANIFEST_TYPES, ReadManifest};
use crate::probe::refusal::{HttpRefusal, Refused, Said};
use crate::probe::registry::{self, MAX_ERROR_BODY, MAX_MANIFEST};
use crate::probe::step::{Step, short_digest};
use crate::probe::stop::Stop;
use crate::vocab::{Hop, Layer};

/// What a resolve attempt on one host came to.
enum Miss {
    /// 404: containerd moves on without remembering it.
    NotFound(Stop),
    /// Anything else: remembered, and the pull moves on.
    Failed(Stop),
}

/// What a fetch asks every host for.
#[derive(Clone, Copy)]
pub(super) enum Fetch<'a> {
    Manifest(&'a Digest),
    Blob { desc: &'a Descriptor, range: bool },
}

impl<N: Network> Walk<N> {
    /// The image's manifest, from the first host that has it.
    pub(super) async fn resolve(&mut self) -> Result<(usize, ReadManifest), Stop> {
        let asked = self.settings.image.digest.clone();
        let reference = self.settings.image.reference().to_string();
        let candidates: Vec<usize> = (0..self.endpoints.len())
            .filter(|&i| {
                let caps = self.endpoints[i].config.capabilities;
                caps.pull && (asked.is_some() || caps.resolve)
            })
            .collect();
        let step = Step::Manifest(reference.clone());
        let what = step.to_string();
        let mut first_failure = None;
        let mut not_found = None;
        for i in candidates {
            let (hop, endpoint) = (
                self.endpoints[i].hop(),
                self.endpoints[i].config.authority.clone(),
            );
            match self.manifest_on(i, &reference).await {
                Ok((response, at)) => {
                    // The host answered: what it sent decides, with no fallback after it.
                    let read = self
                        .read_manifest(response, hop, &at, step.clone(), asked.as_ref())
                        .await?;
                    return Ok((i, read));
                }
                Err(Miss::NotFound(stop)) => {
                    self.fell_back(&endpoint, hop, &what, &stop, FallbackTo::NextHost);
                    not_found = Some(stop);
                }
                Err(Miss::Failed(stop)) => {
                    self.fell_back(&endpoint, hop, &what, &stop, FallbackTo::NextHost);
                    first_failure.get_or_insert(stop);
                }
            }
        }
        Err(first_failure.or(not_found).unwrap_or_else(|| {
            self.no_host(ConfigProblem::NoHost {
                needs: "pull and resolve",
            })
        }))
    }

    /// `GET …/manifests/<reference>` on one host, up to its answer's status.
    async fn manifest_on(
        &mut self,
        i: usize,
        reference: &str,
    ) -> Result<(Response<N::Body>, Authority), Miss> {
        self.authorize(i).await.map_err(Miss::Failed)?;
        let hop = self.endpoints[i].hop();
        let url = self
            .api_url(i, "manifests", reference)
            .map_err(Miss::Failed)?;
        let step = Step::Manifest(reference.to_string());
        let accept = [("Accept".to_string(), MANIFEST_TYPES.to_string())];
        let (response, at) = self
            .get_authorized(i, hop, url, &accept, &step)
            .await
            .map_err(Miss::Failed)?;
        if (200..300).contains(&response.status) {
            return Ok((response, at));
        }
        let stop = self.manifest_refused(response, hop, &at, step).await;
        if stop.layer == Layer::NotFound {
            Err(Miss::NotFound(stop))
        } else {
            Err(Miss::Failed(stop))
        }
    }

    async fn manifest_refused(
        &mut self,
        response: Response<N::Body>,
        hop: Hop,
        at: &Authority,
        step: Step,
    ) -> Stop {
        let status = response.status;
        let challenge = response.header("www-authenticate").map(String::from);
        let retry = registry::retry_note(status, response.header("retry-after"));
        let body = self
            .read_limited(hop, at, response.body, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        let had_auth = self.authorizations.contains_key(at);
        let mut refusal =
            registry::interpret_manifest_failure(status, challenge.as_deref(), &body, had_auth);
        refusal.retry = retry;
        self.fail(hop, at, step, refusal, None)
    }

    async fn read_manifest(
        &mut self,
        response: Response<N::Body>,
        hop: Hop,
        at: &Authority,
        step: Step,
        asked: Option<&Digest>,
    ) -> Result<ReadManifest, Stop> {
        let content_type = response.header("content-type").unwrap_or("?").to_string();
        let read = self
            .read_limited(hop, at, response.body, MAX_MANIFEST)
            .await
            .map_err(Evidence::from)
            .and_then(|body| {
                oci::interpret_manifest(&body, asked, &content_type).map_err(Evidence::from)
            });
        match read {
            Ok(read) => {
                self.path
                    .record(hop, at, step, true, read.summary.clone(), None);
                Ok(read)
            }
            Err(evidence) => Err(self.fail(hop, at, step, evidence, None)),
        }
    }

    /// A child manifest by digest, from the first host that opens it.
    pub(super) async fn fetch_manifest(&mut self, digest: &Digest) -> Result<ReadManifest, Stop> {
        let (i, response, at) = self.open_anywhere(Fetch::Manifest(digest)).await?;
        let hop = self.endpoints[i].hop();
        let step = Step::ManifestByDigest(digest.clone());
        self.read_manifest(response, hop, &at, step, Some(digest))
            .await
    }

    /// Open a manifest or blob on every host in order, as containerd's fetcher does.
    pub(super) async fn open_anywhere(
        &mut self,
        fetch: Fetch<'_>,
    ) -> Result<(usize, Response<N::Body>, Authority), Stop> {
        let mut first = None;
        for i in 0..self.endpoints.len() {
            match self.open_on(i, fetch).await {
                Ok((response, at)) => return Ok((i, response, at)),
                Err(stop) => {
                    let (hop, endpoint) = (
                        self.endpoints[i].hop(),
                        self.endpoints[i].config.authority.clone(),
                    );
                    let what = match fetch {
                        Fetch::Manifest(d) => format!("fetch {}", short_digest(d)),
                        Fetch::Blob { desc, .. } => {
                            format!("fetch {}", short_digest(&desc.digest))
                        }
                    };
                    self.fell_back(&endpoint, hop, &what, &stop, FallbackTo::NextHost);
                    first.get_or_insert(stop);
                }
            }
        }
        Err(first.unwrap_or_else(|| self.no_host(ConfigProblem::NoBlobHost)))
    }

    async fn open_on(
        &mut self,
        i: usize,
        fetch: Fetch<'_>,
    ) -> Result<(Response<N::Body>, Authority), Stop> {
        self.authorize(i).await?;
        let (hop, url, step, mut headers) = match fetch {
            Fetch::Manifest(digest) => (
                self.endpoints[i].hop(),
                self.api_url(i, "manifests", digest.as_str())?,
                Step::ManifestByDigest((*digest).clone()),
                vec![("Accept".to_string(), MANIFEST_TYPES.to_string())],
            ),
            Fetch::Blob { desc, .. } => (
                Hop::Blob,
                self.api_url(i, "blobs", desc.digest.as_str())?,
                Step::OpenBlob(desc.digest.clone()),
                vec![],
            ),
        };
        if let Fetch::Blob { range: true, .. } = fetch {
            headers.push(("Range".into(), format!("bytes=0-{}", RANGE_BYTES - 1)));
        }
        let (response, at) = self.get_authorized(i, hop, url, &headers, &step).await?;
        if (200..300).contains(&response.status) {
            return Ok((response, at));
        }
        if let Fetch::Manifest(_) = fetch {
            return Err(self.manifest_refused(response, hop, &at, step).await);
        }
        let status = response.status;
        let body = self
            .read_limited(hop, &at, response.body, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        let registry_host = self.endpoints.iter().any(|e| e.config.authority == at);
        let refusal = HttpRefusal::new(
            status,
            Refused::Status,
            Said::from_host(&body, &at, registry_host),
        );
        Err(self.fail(hop, &at, step, refusal, None))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::scripted::*;
    use super::*;
    use crate::image_ref::ImageRef;
    use crate::probe::hosts_toml::Capabilities;
    use crate::probe::oci::{ManifestProblem, sha256_digest};

    #[tokio::test]
    async fn resolve_moves_past_a_failing_mirror_and_says_so() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .reply("m.test/v2/", status(500));
        let (outcome, _) = walk(net, mirror_then_registry(), false).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        assert!(
            outcome
                .fallbacks
                .iter()
                .any(|f| f.endpoint.host == "m.test" && f.stop.layer == Layer::Other)
        );
    }

    #[tokio::test]
    async fn the_first_non_404_failure_is_the_pulls() {
        let image = Image::new();
        // The mirror does not resolve; the registry has no such tag: containerd reports the mirror.
        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .broken("m.test", Layer::Dns, "dns")
            .reply("r.test/v2/team/app/manifests/v1", status(404));
        let (outcome, _) = walk(net, mirror_then_registry(), false).await;
        let s = stop(&outcome);
        assert_eq!(
            (s.hop, s.layer, s.authority.host.as_str()),
            (Hop::Mirror, Layer::Dns, "m.test")
        );

        // Every host says 404: not found, from the last host asked.
        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .reply("m.test/v2/", ok(""))
            .reply("r.test/v2/team/app/manifests/v1", status(404));
        let (outcome, _) = walk(net, mirror_then_registry(), false).await;
        let s = stop(&outcome);
        assert_eq!(
            (s.hop, s.layer, s.authority.host.as_str()),
            (Hop::Registry, Layer::NotFound, "r.test")
        );

        // A 404 on the mirror and a 401 on the registry: the 401 decides.
        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .reply("m.test/v2/", ok(""))
            .reply("auth.test/token", status(401));
        let (outcome, _) = walk(net, mirror_then_registry(), false).await;
        let s = stop(&outcome);
        assert_eq!((s.hop, s.layer), (Hop::Auth, Layer::Auth));
    }

    #[tokio::test]
    async fn a_blob_the_mirror_cannot_serve_comes_from_the_next_host() {
        let image = Image::new();
        // The mirror serves manifests, but its blob redirects land on a host without a route.
        let mut net = registry(Scripted::default(), "r.test", "store.test", &image);
        net = registry(net, "m.test", "badstore.test", &image).broken(
            "badstore.test",
            Layer::Route,
            "route",
        );
        let (outcome, _) = walk(net, mirror_then_registry(), true).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        assert!(
            outcome
                .blobs
                .iter()
                .all(|b| b.served_by.host == "store.test")
        );
        assert!(
            outcome
                .fallbacks
                .iter()
                .any(|f| f.stop.authority.host == "badstore.test"
                    && f.stop.mechanism == Some(Layer::Route))
        );
    }

    #[tokio::test]
    async fn a_mirror_without_resolve_is_not_asked_for_the_tag_but_serves_blobs() {
        let image = Image::new();
        let mut net = registry(Scripted::default(), "r.test", "store.test", &image);
        net = registry(net, "m.test", "mstore.test", &image);
        let mut mirror = endpoint("m.test", false);
        mirror.config.capabilities = Capabilities {
            pull: true,
            resolve: false,
            push: false,
        };
        let (outcome, net) = walk(net, vec![mirror, endpoint("r.test", true)], false).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        assert!(net.requests_to("m.test/v2/team/app/manifests/").is_empty());
        assert!(
            outcome
                .blobs
                .iter()
                .all(|b| b.served_by.host == "mstore.test")
        );
        assert!(
            net.requests_to("m.test/v2/team/app/blobs/")
                .iter()
                .all(|r| r.contains("ns=r.test"))
        );
    }

    #[tokio::test]
    async fn a_mirror_404_for_a_blob_moves_on() {
        let image = Image::new();
        let mut net = registry(Scripted::default(), "r.test", "store.test", &image);
        net = registry(net, "m.test", "mstore.test", &image);
        let layer = sha256_digest(&image.layers[1]);
        net = net.reply(&format!("m.test/v2/team/app/blobs/{layer}"), status(404));
        let (outcome, _) = walk(net, mirror_then_registry(), true).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        let served: Vec<&str> = outcome
            .blobs
            .iter()
            .map(|b| b.served_by.host.as_str())
            .collect();
        assert_eq!(served, ["mstore.test", "mstore.test", "store.test"]);
    }

    #[tokio::test]
    async fn a_manifest_by_digest_must_hash_to_it() {
        let image = Image::new();
        let asked = sha256_digest(b"what the pod spec pins");
        let net = registry(Scripted::default(), "r.test", "store.test", &image).reply(
            &format!("r.test/v2/team/app/manifests/{asked}"),
            ok(image.manifest.clone()),
        );
        let net = Arc::new(net);
        let mut s = settings(false);
        s.image = ImageRef::parse(&format!("r.test/team/app@{asked}")).expect("image");
        let outcome = Walk::new(s, vec![endpoint("r.test", true)], net)
            .run()
            .await;
        let s = stop(&outcome);
        assert_eq!((s.hop, s.layer), (Hop::Registry, Layer::Other));
        assert!(
            matches!(
                &*s.evidence,
                Evidence::Manifest(problem) if matches!(
                    &**problem,
                    ManifestProblem::Digest { asked: a, got }
                        if *a == asked && *got == sha256_digest(&image.manifest)
                )
            ),
            "{:?}",
            s.evidence
        );
    }
}
