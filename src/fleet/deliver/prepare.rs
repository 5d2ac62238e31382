//! A run's delivery prepared: the binary of each chosen node's architecture read, checked and
//! packed once, and each node's start (its image and the objects of its architecture) or the
//! run problem that keeps it from starting.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::Node;

use super::node_image::{self, Held};
use super::{Delivered, Payload, Undeliverable, binaries, objects, pack};
use crate::fleet::run_problem::RunProblem;
use crate::fleet::select::NodeChoice;

/// `--node-image` and `--probe-binary`, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given {
    /// The image every node holds; else one each node holds (`node_image::choose`).
    pub node_image: Option<String>,
    /// A static pullpath per architecture; else this executable, for its own.
    pub binaries: BTreeMap<String, PathBuf>,
}

/// The binary of one architecture, packed, or why there is none.
fn load(arch: &str, given: &Given) -> Result<Payload, Undeliverable> {
    let (path, shown) = match given.binaries.get(arch) {
        Some(path) => (
            path.clone(),
            format!("--probe-binary {arch}={}", path.display()),
        ),
        None => {
            let own = std::env::current_exe().map_err(|e| Undeliverable::NoOwnPath {
                error: e.to_string(),
            })?;
            let shown = format!("this pullpath ({})", own.display());
            (own, shown)
        }
    };
    let bytes = std::fs::read(&path).map_err(|e| Undeliverable::Unreadable {
        shown: shown.clone(),
        error: e.to_string(),
    })?;
    pack(&binaries(arch, bytes, &shown)?)
}

/// What a run delivers: one payload per architecture used, and each chosen node's start.
pub struct Prepared {
    pub payloads: Vec<Payload>,
    /// By node name.
    pub starts: BTreeMap<String, Result<Delivered, RunProblem>>,
}

/// Prepare `chosen` nodes (their Node objects in `nodes`, the images their running containers
/// use in `held`) for a run `run_id`.
pub fn prepare(
    run_id: &str,
    chosen: &[&NodeChoice],
    nodes: &[Node],
    held: &Held,
    given: &Given,
) -> Prepared {
    let mut packed: BTreeMap<String, Result<Payload, Undeliverable>> = BTreeMap::new();
    let mut starts = BTreeMap::new();
    for candidate in chosen {
        let name = candidate.facts.name.clone();
        let node = nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(&name));
        // A pool with no node yet: the sandbox image the cluster's nodes hold.
        let cluster = candidate
            .nodeless
            .then(|| node_image::common_sandbox_image(nodes))
            .flatten();
        let running = held.running.get(&name).map_or(&[][..], Vec::as_slice);
        let chosen_image = node_image::choose(given.node_image.as_deref(), node, running, cluster);
        let Some(chosen_image) = chosen_image else {
            starts.insert(
                name,
                Err(RunProblem::NoNodeImage {
                    pods_unread: held.pods_unread.clone(),
                }),
            );
            continue;
        };
        let Some(arch) = candidate.arch.clone() else {
            starts.insert(
                name,
                Err(RunProblem::NoProbeBinary {
                    arch: "an unknown architecture".into(),
                    why: Undeliverable::UnknownArch,
                }),
            );
            continue;
        };
        let payload = packed
            .entry(arch.clone())
            .or_insert_with(|| load(&arch, given));
        let start = match payload {
            Ok(payload) => Ok(Delivered {
                node_image: chosen_image.image,
                node_image_source: chosen_image.source,
                config_maps: objects(run_id, payload)
                    .into_iter()
                    .map(|(name, key, _)| (name, key))
                    .collect(),
                size: payload.size,
                sha256: payload.sha256.clone(),
            }),
            Err(why) => Err(RunProblem::NoProbeBinary {
                arch,
                why: why.clone(),
            }),
        };
        starts.insert(name, start);
    }
    let payloads = packed.into_values().filter_map(Result::ok).collect();
    Prepared { payloads, starts }
}

/// A `--probe-binary` that is not `ARCH=PATH`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--probe-binary {given:?}: want ARCH=PATH (amd64=/path/to/static/pullpath)")]
pub struct NotArchPath {
    pub given: String,
}
