//! Which of the node's own failures a message is (`NodeCause`), read from the words the kubelet
//! and the runtimes write for each, beside the layer the chain gave.
//!
//! Sources, each message shape from the code that writes it:
//! - kubernetes `pkg/kubelet/images/types.go` names the reasons (`ErrImageNeverPull`,
//!   `InvalidImageName`, `ImageInspectError`); `pkg/kubelet/images/image_manager.go` writes
//!   their events: `Container image %q is not present with pull policy of Never`,
//!   `Failed to apply default image tag %q: %v` (with `couldn't parse image name %q` /
//!   `couldn't parse image reference %q` and distribution's `invalid reference format`),
//!   `Failed to inspect image %q: %v`; `pkg/kubelet/images/helpers.go`'s throttled image service
//!   answers `pull QPS exceeded` before asking the runtime (v1.16 to v1.33 alike).
//! - containerd's unpacker (`core/unpack/unpacker.go`, 1.7 `unpacker.go`) wraps an apply error
//!   as `failed to extract layer %s: %w`; the snapshotter's as `failed to prepare extraction
//!   snapshot`; CRI as `failed to unpack image on snapshotter`; Docker's layer store as `failed
//!   to register layer` (`ApplyLayer exit status 1`); containers/storage as `processing tar
//!   file` and containers/image as `adding layer with blob`. The kernel's ENOSPC reads `no space
//!   left on device` in all of them (Go's `syscall.Errno` text).
//! - containerd's CRI image service (1.7 `pkg/cri/server/image_pull.go`, 2.x
//!   `internal/cri/server/images/image_pull.go`) cancels a pull whose bytes stop flowing for
//!   `image_pull_progress_timeout` (default 5m): it logs `cancel pulling image %s because of no
//!   progress in %v`, and the pull fails with `context canceled`. A `context deadline exceeded`
//!   with nothing inside it is the deadline of the CRI call itself running out, with the pull
//!   still dialling or still downloading: `PullDeadline`, undecided between the two.

use super::Ambiguity;
use super::prose::deadline_ambiguity;
use crate::failure_text::chain::Chain;
use crate::vocab::{Layer, NodeCause};

const NEVER_PULL: [&str; 2] = [
    "is not present with pull policy of Never",
    "ErrImageNeverPull",
];
const INVALID_NAME: [&str; 7] = [
    "InvalidImageName",
    "Failed to apply default image tag",
    "invalid reference format",
    "couldn't parse image reference",
    "couldn't parse image name",
    "failed to parse image reference",
    "repository name must be lowercase",
];
const INSPECT: [&str; 2] = ["ImageInspectError", "Failed to inspect image"];
const DISK: [&str; 2] = ["no space left on device", "disk quota exceeded"];
const UNPACK: [&str; 9] = [
    "failed to extract layer",
    "failed to register layer",
    "ApplyLayer",
    "error unpacking image",
    "failed to unpack image",
    "failed to prepare extraction snapshot",
    "apply failure",
    "processing tar file",
    "adding layer with blob",
];
/// A transfer under way: the runtime was copying a body when it stopped (containerd's
/// `failed to copy`, from `content.Copy`), not opening a request (`failed open`, `failed to do
/// request`: those wrap a dial or the wait for headers).
const COPYING: [&str; 2] = ["failed to copy", "failed to read expected number of bytes"];
const OPENING: [&str; 3] = ["failed open", "failed to do request", "dial tcp"];
const PROGRESS_TIMEOUT: &str = "because of no progress";

/// What the node cause says about the pull, beyond its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NodeReading {
    pub cause: NodeCause,
    /// For a transfer cut short: the mechanism is the deadline, not a route.
    pub mechanism: Option<Layer>,
    /// When the text cannot tell a slow transfer from a connection that never came.
    pub ambiguity: Option<Ambiguity>,
}

impl NodeReading {
    fn of(cause: NodeCause) -> Option<NodeReading> {
        Some(NodeReading {
            cause,
            mechanism: None,
            ambiguity: None,
        })
    }
}

/// The node's own failure `chain` names, given the `mechanism` its innermost cause had.
pub(super) fn node_cause(chain: &Chain, mechanism: Layer) -> Option<NodeReading> {
    let text = chain.text.as_str();
    let any = |words: &[&str]| words.iter().any(|w| text.contains(w));
    if mechanism == Layer::RateLimit && text.contains("pull QPS exceeded") {
        return NodeReading::of(NodeCause::PullQps);
    }
    if text.contains(PROGRESS_TIMEOUT) {
        return NodeReading::of(NodeCause::SlowTransfer);
    }
    if !matches!(mechanism, Layer::Other | Layer::Route) {
        return None;
    }
    if mechanism == Layer::Other {
        // In the order the kubelet meets them: the spec's name and policy before any runtime
        // call, then the runtime's inspect, then the runtime's writes.
        let found = [
            (&NEVER_PULL[..], NodeCause::PullPolicy),
            (&INVALID_NAME[..], NodeCause::InvalidName),
            (&INSPECT[..], NodeCause::Inspect),
            (&DISK[..], NodeCause::Disk),
            (&UNPACK[..], NodeCause::Unpack),
        ]
        .into_iter()
        .find(|(words, _)| any(words));
        if let Some((_, cause)) = found {
            return NodeReading::of(cause);
        }
    }
    slow_transfer(chain)
}

/// A deadline or cancellation with no dial, lookup or handshake inside it.
fn slow_transfer(chain: &Chain) -> Option<NodeReading> {
    let last = chain
        .cause_links()
        .last()?
        .trim_end_matches(['"', '.', ' ']);
    let deadline = last.ends_with("context deadline exceeded");
    let canceled = last.ends_with("context canceled");
    if !(deadline || canceled) || chain.has_link(&OPENING) || !chain.requests.is_empty() {
        return None;
    }
    let text = chain.text.to_ascii_lowercase();
    // The CRI socket itself (crictl's `failed to connect: … context deadline exceeded`) is no
    // pull at all.
    if !text.contains("pull") || text.contains("failed to connect: ") {
        return None;
    }
    let copying = chain.has_link(&COPYING);
    let reading = NodeReading {
        cause: NodeCause::SlowTransfer,
        mechanism: Some(Layer::Other),
        ambiguity: None,
    };
    if copying || canceled {
        // Bytes were flowing (a copy), or the pull was cancelled, which containerd's progress
        // timeout does: no connection failed.
        return Some(reading);
    }
    // `context deadline exceeded` and nothing inside it: the call's deadline ran out while the
    // pull was still running, dialling or downloading, and the text does not say which.
    Some(NodeReading {
        cause: NodeCause::PullDeadline,
        ambiguity: Some(deadline_ambiguity()),
        ..reading
    })
}

#[cfg(test)]
mod tests {
    use super::super::{classify, one};
    use super::*;
    use crate::vocab::{Hop, Runtime};

    fn read(text: &str) -> (Layer, Hop, Option<NodeCause>, bool) {
        let d = classify(&one(text), Runtime::Unknown);
        (d.layer, d.hop, d.node_cause, d.ambiguity.is_some())
    }

    #[test]
    fn the_kubelets_own_refusals_are_named() {
        assert_eq!(
            read(r#"Container image "nginx:1.25" is not present with pull policy of Never"#),
            (
                Layer::Other,
                Hop::Unknown,
                Some(NodeCause::PullPolicy),
                false
            )
        );
        assert_eq!(
            read(
                r#"Failed to apply default image tag "busyBOX": couldn't parse image reference "busyBOX": invalid reference format: repository name must be lowercase"#
            ),
            (
                Layer::Other,
                Hop::Unknown,
                Some(NodeCause::InvalidName),
                false
            )
        );
        assert_eq!(
            read("Error: InvalidImageName").2,
            Some(NodeCause::InvalidName)
        );
        assert_eq!(
            read(r#"Failed to inspect image "x:1": rpc error: code = Unknown desc = open /var/lib/containerd/x: input/output error"#).2,
            Some(NodeCause::Inspect)
        );
        assert_eq!(
            read(r#"Failed to pull image "r/a:1": pull QPS exceeded"#).2,
            Some(NodeCause::PullQps)
        );
    }

    #[test]
    fn a_full_disk_is_the_disk_and_a_failed_unpack_the_unpack() {
        let full = read(
            r#"Failed to pull image "big/img:1": rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/big/img:1": failed to extract layer sha256:abc: write /var/lib/containerd/snap/55/fs/x.so: no space left on device: unknown"#,
        );
        assert_eq!(
            full,
            (Layer::Other, Hop::Unknown, Some(NodeCause::Disk), false)
        );
        assert_eq!(
            read(r#"failed to pull and unpack image "docker.io/a:1": failed to extract layer sha256:abc: mount callback failed on /tmp/x: exit status 1: unknown"#).2,
            Some(NodeCause::Unpack)
        );
    }

    #[test]
    fn a_transfer_cut_by_a_deadline_is_slow_not_a_route() {
        // The body was being copied when the deadline ran out: the path works.
        let copy = read(
            r#"failed to pull and unpack image "r.example/big:1": failed to copy: context deadline exceeded"#,
        );
        assert_eq!(
            copy,
            (Layer::Blob, Hop::Blob, Some(NodeCause::SlowTransfer), false)
        );
        // containerd's progress timeout cancels the pull.
        assert_eq!(
            read(r#"Failed to pull image "gcr.io/a/big:1": rpc error: code = Unknown desc = context canceled"#).2,
            Some(NodeCause::SlowTransfer)
        );
        assert_eq!(
            read(r#"level=error msg="cancel pulling image r.example/big:1 because of no progress in 5m0s""#).2,
            Some(NodeCause::SlowTransfer)
        );
    }

    #[test]
    fn a_bare_deadline_says_it_cannot_tell_a_slow_body_from_a_dial() {
        let (layer, _, cause, undecided) = read(
            r#"Failed to pull image "big/img:1": rpc error: code = DeadlineExceeded desc = context deadline exceeded"#,
        );
        assert_eq!(
            (layer, cause, undecided),
            (Layer::Other, Some(NodeCause::PullDeadline), true)
        );
    }

    #[test]
    fn a_deadline_with_a_dial_inside_stays_the_route() {
        let (layer, _, cause, _) = read(
            r#"rpc error: code = DeadlineExceeded desc = failed to pull and unpack image "docker.io/a:1": failed to resolve reference "docker.io/a:1": failed to do request: Head "https://registry-1.docker.io/v2/a/manifests/1": dial tcp 1.2.3.4:443: i/o timeout"#,
        );
        assert_eq!((layer, cause), (Layer::Route, None));
        // crictl's own socket: no pull.
        assert_eq!(
            read("FATA[0010] failed to connect: failed to connect: context deadline exceeded").2,
            None
        );
    }
}
