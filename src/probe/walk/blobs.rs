//! Blobs fetched and recorded: a quick probe reads each layer's first bytes, `--full` downloads
//! every layer in parallel with progress, each verified against its descriptor as it streams.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::host_order::Fetch;
use super::{Blob, RANGE_BYTES, Walk};
use crate::probe::authority::Authority;
use crate::probe::body::{Meter, next_chunk};
use crate::probe::net::{Body, Network};
use crate::probe::observed::body::BodyProblem;
use crate::probe::oci::{BlobCheck, Descriptor};
use crate::probe::step::{BlobKind, Step};
use crate::probe::stop::Stop;
use crate::vocab::Hop;

/// A blob as read, before it is recorded.
struct Fetched {
    kind: BlobKind,
    desc: Descriptor,
    served_by: Authority,
    /// The hosts its request crossed.
    redirects: Vec<Authority>,
    /// Whether every byte was read (so `Ok` means verified).
    verified: bool,
    result: Result<String, BodyProblem>,
    elapsed: Duration,
}

impl<N: Network> Walk<N> {
    /// Fetch one blob on the first host that opens it: fully (verified) or its first bytes.
    pub(super) async fn blob(
        &mut self,
        kind: BlobKind,
        desc: &Descriptor,
        full: bool,
    ) -> Result<(), Stop> {
        let started = Instant::now();
        let (_, response, at) = self
            .open_anywhere(Fetch::Blob { desc, range: !full })
            .await?;
        let redirects = self.chain.clone();
        let idle = self.settings.timeouts.http;
        let result = if full {
            let meter = self.meter(Hop::Blob, &at, Some(desc.size));
            verify(response.body, desc, None, idle, &meter).await
        } else {
            let status = response.status;
            let meter = self.meter(Hop::Blob, &at, None);
            read_prefix(response.body, RANGE_BYTES, idle, &meter)
                .await
                .map(|bytes| format!("{status}: read the first {bytes} bytes"))
        };
        self.finish_blob(Fetched {
            kind,
            desc: desc.clone(),
            served_by: at,
            redirects,
            verified: full,
            result,
            elapsed: started.elapsed(),
        })
    }

    fn finish_blob(&mut self, fetched: Fetched) -> Result<(), Stop> {
        let Fetched {
            kind,
            desc,
            served_by,
            redirects: chain,
            verified,
            result,
            elapsed,
        } = fetched;
        let ok = result.is_ok();
        let detail = match &result {
            Ok(d) => d.clone(),
            Err(problem) => problem.to_string(),
        };
        let step = Step::Blob(kind, desc.digest.clone());
        let shown = format!("{detail}{}", crossed(&chain));
        self.path
            .record(Hop::Blob, &served_by, &step, ok, shown, Some(elapsed));
        self.blobs.push(Blob {
            kind,
            digest: desc.digest.clone(),
            size: desc.size,
            served_by: served_by.clone(),
            redirects: if chain.len() > 1 { chain } else { vec![] },
            verified: ok && verified,
            detail: detail.clone(),
            elapsed,
        });
        match result {
            Ok(_) => Ok(()),
            // Content that does not arrive whole and verified is the blob hop's failure.
            Err(problem) => Err(Stop::new(Hop::Blob, &served_by, step, problem)),
        }
    }

    /// `--full`: open every layer in order (host checks and redirects), then download and
    /// verify them in parallel, each hashed on its own task.
    pub(super) async fn download_layers(&mut self, layers: &[Descriptor]) -> Result<(), Stop> {
        let progress = crate::probe::progress::Bars::new(self.settings.progress);
        let mut set = tokio::task::JoinSet::new();
        // No more permits than layers: a node's limit may be any number.
        let at_once = (self.settings.parallel)
            .map_or(layers.len(), |n| n.min(layers.len()))
            .max(1);
        let semaphore = Arc::new(tokio::sync::Semaphore::new(at_once));
        let idle = self.settings.timeouts.http;
        let mut opened = Ok(());
        for (index, desc) in layers.iter().enumerate() {
            // The semaphore is never closed, so acquiring only waits.
            let Ok(permit) = semaphore.clone().acquire_owned().await else {
                break;
            };
            let started = Instant::now();
            let (_, response, served_by) =
                match self.open_anywhere(Fetch::Blob { desc, range: false }).await {
                    Ok(opened) => opened,
                    Err(stop) => {
                        opened = Err(stop);
                        break;
                    }
                };
            let redirects = self.chain.clone();
            let bar = progress.bar(desc);
            let meter = self.meter(Hop::Blob, &served_by, Some(desc.size));
            let desc = desc.clone();
            set.spawn(async move {
                let result = verify(response.body, &desc, Some(&bar), idle, &meter).await;
                bar.finish_and_clear();
                drop(permit);
                let elapsed = started.elapsed();
                let fetched = Fetched {
                    kind: BlobKind::Layer,
                    desc,
                    served_by,
                    redirects,
                    verified: true,
                    result,
                    elapsed,
                };
                (index, fetched)
            });
        }
        let mut done: Vec<_> = set.join_all().await;
        done.sort_by_key(|(index, _)| *index);
        let mut outcome = Ok(());
        for (_, fetched) in done {
            if let Err(stop) = self.finish_blob(fetched) {
                outcome = outcome.and(Err(stop));
            }
        }
        outcome.and(opened)
    }
}

/// Read the first `limit` bytes of a body (or all of a shorter one), each chunk within `idle`.
async fn read_prefix<B: Body>(
    mut body: B,
    limit: usize,
    idle: Duration,
    meter: &Meter,
) -> Result<usize, BodyProblem> {
    let mut seen = 0;
    let result = loop {
        if seen >= limit {
            break Ok(limit);
        }
        match next_chunk(&mut body, idle, meter).await {
            Err(e) => break Err(e),
            Ok(None) => break Ok(seen),
            Ok(Some(chunk)) => seen += chunk.len(),
        }
    };
    meter.finish();
    result
}

/// Download a blob, checking size and digest as it streams, each chunk within `idle`.
async fn verify<B: Body>(
    mut body: B,
    desc: &Descriptor,
    bar: Option<&indicatif::ProgressBar>,
    idle: Duration,
    meter: &Meter,
) -> Result<String, BodyProblem> {
    let started = Instant::now();
    let mut check = BlobCheck::new(desc);
    let fed = loop {
        let chunk = match next_chunk(&mut body, idle, meter).await {
            Err(e) => break Err(e),
            Ok(None) => break Ok(()),
            Ok(Some(chunk)) => chunk,
        };
        if let Err(e) = check.feed(&chunk) {
            break Err(e);
        }
        if let Some(bar) = bar {
            bar.inc(chunk.len() as u64);
        }
    };
    meter.finish();
    fed?;
    let total = check.finish()?;
    let secs = started.elapsed().as_secs_f64().max(1e-6);
    Ok(format!(
        "{total} bytes verified sha256 ({:.1} MB/s)",
        total as f64 / secs / 1e6
    ))
}

/// ` (via a → b → c)` for a request that crossed more than one host.
fn crossed(chain: &[Authority]) -> String {
    if chain.len() < 2 {
        return String::new();
    }
    let hosts: Vec<String> = chain.iter().map(ToString::to_string).collect();
    format!(" (via {})", hosts.join(" → "))
}

#[cfg(test)]
mod tests {
    use super::super::scripted::*;
    use super::*;
    use crate::probe::evidence::Evidence;
    use crate::probe::oci::sha256_digest;
    use crate::vocab::Layer;

    #[tokio::test]
    async fn a_corrupt_layer_fails_on_the_blob_hop_naming_both_digests() {
        let image = Image::new();
        let layer = sha256_digest(&image.layers[0]);
        let net = registry(Scripted::default(), "r.test", "store.test", &image).reply(
            &format!("store.test/r.test/{layer}"),
            ok(b"LAYER ONE BYTES".to_vec()),
        );
        let (outcome, _) = walk(net, vec![endpoint("r.test", true)], true).await;
        let s = stop(&outcome);
        assert_eq!(
            (s.hop, s.layer, s.mechanism),
            (Hop::Blob, Layer::Blob, Some(Layer::Other))
        );
        assert_eq!(s.authority.host, "store.test");
        assert!(
            matches!(
                &*s.evidence,
                Evidence::Body(BodyProblem::Digest { want, .. }) if *want == layer
            ),
            "{:?}",
            s.evidence
        );
    }

    /// Two layers whose bodies go silent: one at a time, the second waits out the first's
    /// silence (two http timeouts in all); two at once, or no limit, both wait together.
    #[tokio::test(start_paused = true)]
    async fn no_more_layers_download_at_once_than_the_limit() {
        let image = Image::new();
        for (parallel, timeouts) in [(Some(1), 2), (Some(2), 1), (None, 1)] {
            let mut net = registry(Scripted::default(), "r.test", "store.test", &image);
            for layer in &image.layers {
                net = net.reply(
                    &format!("store.test/r.test/{}", sha256_digest(layer)),
                    Reply::StalledBody {
                        status: 200,
                        first: vec![1],
                    },
                );
            }
            let mut settings = settings(true);
            settings.parallel = parallel;
            let idle = settings.timeouts.http;
            let started = tokio::time::Instant::now();
            let (outcome, net) = walk_with(settings, net).await;
            assert_eq!(stop(&outcome).hop, Hop::Blob, "{parallel:?}");
            assert_eq!(
                net.requests_to("store.test/").len(),
                3,
                "the config and both layers were asked for"
            );
            let waited = started.elapsed();
            assert!(
                waited >= idle * timeouts && waited < idle * (timeouts + 1),
                "{parallel:?}: {waited:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_silent_longer_than_the_http_timeout_stops() {
        let image = Image::new();
        let layer = sha256_digest(&image.layers[1]);
        let net = registry(Scripted::default(), "r.test", "store.test", &image).reply(
            &format!("store.test/r.test/{layer}"),
            Reply::StalledBody {
                status: 200,
                first: vec![7u8; 100],
            },
        );
        let (outcome, _) = walk(net, vec![endpoint("r.test", true)], true).await;
        let s = stop(&outcome);
        assert_eq!(
            (s.hop, s.layer, s.authority.host.as_str()),
            (Hop::Blob, Layer::Blob, "store.test")
        );
        assert_eq!(
            *s.evidence,
            Evidence::Body(BodyProblem::Stalled {
                idle_ms: 5000,
                after: 100
            })
        );

        // The same silence in a manifest body.
        let net = registry(Scripted::default(), "r.test", "store.test", &image).reply(
            "r.test/v2/team/app/manifests/v1",
            Reply::StalledBody {
                status: 200,
                first: b"{".to_vec(),
            },
        );
        let (outcome, _) = walk(net, vec![endpoint("r.test", true)], false).await;
        assert!(matches!(
            *stop(&outcome).evidence,
            Evidence::Body(BodyProblem::Stalled { after: 1, .. })
        ));
    }
}
