//! `--runtime-pull`: the node's runtime's own answer beside the probe's, asked over CRI as the
//! kubelet asks it (`ImageStatus`, then `PullImage` with the credential the kubelet would pass),
//! and the node left as it was found: an image it did not hold is removed again (`RemoveImage`,
//! as the kubelet's image garbage collector removes one), unless its content was already there
//! under another name, which is then left alone.

use std::path::Path;
use std::time::Duration;

use crate::credentials::Credentials;
use crate::image_ref::ImageRef;
use crate::runtime::cri::{HeldImage, ImageService, PullOutcome};

/// What the runtime said, and what was done to leave the node as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimePull {
    pub answer: Answer,
    /// The node held the image before the pull.
    pub was_cached: bool,
    pub cleanup: Cleanup,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// `PullImage` succeeded: the image reference the runtime returned.
    Pulled(String),
    /// The runtime's own error, as a kubelet event carries it.
    Failed(String),
    /// The runtime could not be asked at all.
    Unasked(String),
}

/// What happened to the pulled image afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cleanup {
    /// Nothing to undo: the pull failed, or the node held the image before.
    Nothing,
    Removed,
    /// Left in place, and why.
    Kept(String),
}

/// Whether removing `after` (what the pull left under `image`) restores the node: only when
/// the node did not hold the image and every name the image now has is the pulled
/// repository's own (`repo:tag`, `repo@sha256:…`); another name means its content was there
/// before, and `RemoveImage` would take that away too.
pub fn removal(before: Option<&HeldImage>, after: &HeldImage, repository: &str) -> Cleanup {
    if before.is_some() {
        return Cleanup::Nothing;
    }
    let foreign: Vec<&String> = after
        .names
        .iter()
        .filter(|name| {
            let rest = name.strip_prefix(repository).unwrap_or("/");
            !(rest.starts_with(':') || rest.starts_with('@'))
        })
        .collect();
    if foreign.is_empty() {
        Cleanup::Removed
    } else {
        let shown: Vec<&str> = foreign.iter().map(|n| n.as_str()).collect();
        Cleanup::Kept(format!(
            "its content was on the node already as {}: left in place",
            shown.join(", ")
        ))
    }
}

/// Ask the runtime on `socket` to pull `image` with `credentials`, then leave the node as
/// found.
pub async fn ask(
    socket: &Path,
    image: &ImageRef,
    credentials: Option<&Credentials>,
    timeout: Duration,
) -> RuntimePull {
    let repository = format!("{}/{}", image.registry, image.repository);
    let image = &image.to_string();
    let unasked = |why: String| RuntimePull {
        answer: Answer::Unasked(why),
        was_cached: false,
        cleanup: Cleanup::Nothing,
    };
    let mut runtime = match ImageService::connect(socket, timeout).await {
        Ok(runtime) => runtime,
        Err(e) => return unasked(e.to_string()),
    };
    let before = match runtime.status(image).await {
        Ok(before) => before,
        Err(e) => return unasked(e.to_string()),
    };
    let was_cached = before.is_some();
    let answer = match runtime.pull(image, credentials).await {
        Ok(PullOutcome::Pulled { image_ref }) => Answer::Pulled(image_ref),
        Ok(failed @ PullOutcome::Failed { .. }) => {
            Answer::Failed(failed.kubelet_event(image).unwrap_or_default())
        }
        Err(e) => return unasked(e.to_string()),
    };
    let cleanup = match &answer {
        Answer::Pulled(_) => undo(&mut runtime, image, before.as_ref(), &repository).await,
        _ => Cleanup::Nothing,
    };
    RuntimePull {
        answer,
        was_cached,
        cleanup,
    }
}

/// After a pull that worked: remove `image` again when [`removal`] says that restores the node.
async fn undo(
    runtime: &mut ImageService,
    image: &str,
    before: Option<&HeldImage>,
    repository: &str,
) -> Cleanup {
    let after = match runtime.status(image).await {
        Ok(Some(after)) => after,
        Ok(None) => return Cleanup::Nothing,
        Err(e) => return Cleanup::Kept(format!("its status could not be read: {e}")),
    };
    match removal(before, &after, repository) {
        Cleanup::Removed => match runtime.remove(image).await {
            Ok(()) => Cleanup::Removed,
            Err(e) => Cleanup::Kept(format!("removing it failed: {e}")),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(names: &[&str]) -> HeldImage {
        HeldImage {
            id: "sha256:abc".into(),
            names: names.iter().map(|n| n.to_string()).collect(),
        }
    }

    #[test]
    fn only_an_image_the_pull_brought_is_removed() {
        let repo = "registry.example.test/team-a/small";
        let ours = held(&[
            "registry.example.test/team-a/small:v1",
            "registry.example.test/team-a/small@sha256:0123",
        ]);
        assert_eq!(removal(None, &ours, repo), Cleanup::Removed);
        assert_eq!(removal(Some(&ours), &ours, repo), Cleanup::Nothing);
        let shared = held(&[
            "registry.example.test/team-a/small:v1",
            "registry.example.test/team-a/small-base:v1",
        ]);
        assert!(matches!(
            removal(None, &shared, repo),
            Cleanup::Kept(why) if why.contains("small-base:v1")
        ));
    }
}
