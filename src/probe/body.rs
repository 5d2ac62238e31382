//! Reading a response body as the runtime reads it: chunk by chunk, each chunk within the idle
//! timeout, every byte counted on a [`Meter`] that the walk's total deadline can read. The one
//! body reader of the walk: a manifest, a token answer, an error body, a layer's first bytes
//! and a whole layer all go through [`next_chunk`].
//!
//! A body that stalls (no byte within the idle timeout) fails here. A body that *trickles* —
//! bytes keep coming, too slowly to finish — never stalls; the walk's total deadline ends it,
//! and the meter then says what was seen: how many bytes in how long, on which hop and host.
//! containerd does not end such a pull: its CRI `image_pull_progress_timeout` (5 minutes by
//! default since 1.7.24 and in 2.x, 1 minute in earlier 1.7, none in 1.6) cancels a pull only
//! when *no* byte arrived for that long (`pullProgressReporter`,
//! `internal/cri/server/images/image_pull.go`), so on the node the pull hangs for as long as the
//! trickle lasts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
// Tokio's clock: the walk's deadline and a paused test's time run on it too.
use tokio::time::Instant;

use super::authority::Authority;
use super::net::Body;
use super::observed::body::{BodyProblem, Trickle};
use crate::vocab::Hop;

/// One body being read: where from, how much of it, since when.
#[derive(Debug)]
pub struct Meter {
    pub hop: Hop,
    pub authority: Authority,
    /// The size the body should have, when known (a blob's descriptor).
    pub total: Option<u64>,
    started: Instant,
    bytes: AtomicU64,
    done: AtomicBool,
}

impl Meter {
    pub fn start(hop: Hop, authority: &Authority, total: Option<u64>) -> Arc<Meter> {
        Arc::new(Meter {
            hop,
            authority: authority.clone(),
            total,
            started: Instant::now(),
            bytes: AtomicU64::new(0),
            done: AtomicBool::new(false),
        })
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The body was read to its end or given up on.
    pub fn finish(&self) {
        self.done.store(true, Ordering::Relaxed);
    }

    /// Still being read.
    pub fn active(&self) -> bool {
        !self.done.load(Ordering::Relaxed)
    }

    /// What a body still being read when the deadline ran out showed.
    pub fn trickle(&self) -> Trickle {
        Trickle {
            authority: self.authority.clone(),
            bytes: self.bytes(),
            total: self.total,
            elapsed: self.started.elapsed(),
        }
    }
}

/// The next chunk of `body` within `idle` (`None` at its end), counted on `meter`.
pub async fn next_chunk<B: Body>(
    body: &mut B,
    idle: Duration,
    meter: &Meter,
) -> Result<Option<Bytes>, BodyProblem> {
    match tokio::time::timeout(idle, body.chunk()).await {
        Err(_) => Err(BodyProblem::Stalled {
            idle_ms: idle.as_millis(),
            after: meter.bytes(),
        }),
        Ok(Err(error)) => Err(BodyProblem::Broke {
            after: meter.bytes(),
            error,
        }),
        Ok(Ok(chunk)) => {
            if let Some(chunk) = &chunk {
                meter.bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
            Ok(chunk)
        }
    }
}

/// Read a whole body of at most `limit` bytes, each chunk within `idle`.
pub async fn read_limited<B: Body>(
    mut body: B,
    limit: usize,
    idle: Duration,
    meter: &Meter,
) -> Result<Vec<u8>, BodyProblem> {
    let mut out = Vec::new();
    let result = loop {
        match next_chunk(&mut body, idle, meter).await {
            Err(e) => break Err(e),
            Ok(None) => break Ok(out),
            Ok(Some(chunk)) => {
                if out.len() + chunk.len() > limit {
                    break Err(BodyProblem::TooLarge { limit });
                }
                out.extend_from_slice(&chunk);
            }
        }
    };
    meter.finish();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trickle_is_named_with_its_rate_and_what_containerd_does() {
        let at = Authority::parse("store.test", 443).expect("authority");
        let meter = Meter::start(Hop::Blob, &at, Some(1_000_000));
        meter.bytes.store(50, Ordering::Relaxed);
        let trickle = meter.trickle();
        assert_eq!(
            (&trickle.authority, trickle.bytes, trickle.total),
            (&at, 50, Some(1_000_000))
        );
        let said = trickle.to_string();
        assert!(said.contains("store.test"), "{said}");
        assert!(said.contains("50 of 1000000 bytes"), "{said}");
        assert!(said.contains("image_pull_progress_timeout"), "{said}");
        assert!(meter.active());
        meter.finish();
        assert!(!meter.active());
    }
}
