//! What a body showed when it went wrong: stalled, broke, ran long, did not verify; or, when
//! the walk's deadline ended it, how it trickled.

use std::time::Duration;

use super::transport::Transport;
use crate::image_ref::Digest;
use crate::probe::authority::Authority;

/// What went wrong with a body, as observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyProblem {
    /// No byte within the idle timeout.
    Stalled { idle_ms: u128, after: u64 },
    /// The connection broke while the body arrived: what broke.
    Broke { after: u64, error: Transport },
    /// Longer than what the walk reads of this kind of body (a manifest's 4 MiB, as
    /// containerd's limit).
    TooLarge { limit: usize },
    /// Longer than the descriptor's size: not this blob.
    Longer { size: u64 },
    /// Ended at another size than the descriptor's.
    Size { got: u64, want: u64 },
    /// The bytes hash to another digest than the descriptor's.
    Digest { got: Digest, want: Digest },
}

impl std::fmt::Display for BodyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyProblem::Stalled { idle_ms, after } => write!(
                f,
                "the body stalled: no data for {idle_ms} ms after {after} bytes"
            ),
            BodyProblem::Broke { after, error } => {
                write!(f, "the body broke after {after} bytes: {error}")
            }
            BodyProblem::TooLarge { limit } => {
                write!(f, "the body is larger than the {limit}-byte limit")
            }
            BodyProblem::Longer { size } => write!(
                f,
                "more bytes than the manifest's size {size}: the body is not this blob"
            ),
            BodyProblem::Size { got, want } => {
                write!(f, "got {got} bytes, the manifest says {want}")
            }
            BodyProblem::Digest { got, want } => write!(
                f,
                "digest mismatch: the bytes hash to {got}, the manifest says {want}"
            ),
        }
    }
}

/// A body still arriving when the walk's deadline ran out: bytes kept coming, too slowly to
/// finish. Its words say what the runtime does with such a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trickle {
    pub authority: Authority,
    pub bytes: u64,
    /// The size the body should have, when known.
    pub total: Option<u64>,
    pub elapsed: Duration,
}

impl Trickle {
    /// Bytes a second over the whole read.
    pub fn rate(&self) -> f64 {
        self.bytes as f64 / self.elapsed.as_secs_f64().max(1e-3)
    }
}

impl std::fmt::Display for Trickle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seconds = self.elapsed.as_secs_f64().max(1e-3);
        let (bytes, rate) = (self.bytes, self.rate());
        write!(f, "the body from {} trickled: {bytes}", self.authority)?;
        if let Some(total) = self.total {
            write!(f, " of {total}")?;
        }
        write!(f, " bytes in {seconds:.1} s ({rate:.1} B/s)")?;
        if let Some(total) = self.total
            && rate > 0.0
            && total > bytes
        {
            write!(
                f,
                ", about {} more at that rate",
                human_seconds((total - bytes) as f64 / rate)
            )?;
        }
        f.write_str("; containerd keeps reading a body while bytes arrive (its image_pull_progress_timeout cancels a pull only after minutes with no byte at all), so on the node this pull hangs rather than fails")
    }
}

/// `90 s`, `25 min`, `3.2 h`, `4.1 days`.
fn human_seconds(seconds: f64) -> String {
    match seconds {
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.0} min", s / 60.0),
        s if s < 172_800.0 => format!("{:.1} h", s / 3600.0),
        s => format!("{:.1} days", s / 86_400.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human_seconds(30.0), "30 s");
        assert_eq!(human_seconds(600.0), "10 min");
        assert_eq!(human_seconds(36_000.0), "10.0 h");
        assert_eq!(human_seconds(864_000.0), "10.0 days");
    }
}
