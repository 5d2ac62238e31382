//! A run's validated settings, as the command line gives them: the image, how the probe pods
//! start, which nodes to choose, and the run's own clocks and parallelism. Data only, and the
//! few pure readings of the flags that make it.

use std::time::Duration;

use super::deliver::prepare::{Given, NotArchPath};
use super::life::{Budgets, ProbeOrigin};
use super::progress::Sink;
use super::select::Choice;
use crate::cluster::{ObjectRef, Target};
use crate::image_ref::ImageRef;

/// How the probe pods start: the one place it is decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeSource {
    /// `--probe-image`: each node pulls it like any image.
    Image(String),
    /// No registry (the default): an image each node holds, pullpath delivered through the API
    /// (`deliver`).
    Delivered(Given),
}

impl ProbeSource {
    /// The report's `probe_image`: the image, or how the probe reached the nodes.
    pub fn describe(&self) -> String {
        match self {
            ProbeSource::Image(image) => image.clone(),
            ProbeSource::Delivered(given) => format!(
                "none: pullpath delivered through the API, started from {}",
                given
                    .node_image
                    .as_deref()
                    .unwrap_or("each node's sandbox image")
            ),
        }
    }
}

/// The probe's source from `--probe-image`, `--node-image` and `--probe-binary ARCH=PATH`:
/// a probe image, else delivery through the API; a `--probe-binary` that is not `ARCH=PATH`
/// is refused.
pub fn probe_source(
    probe_image: Option<&str>,
    node_image: Option<&str>,
    probe_binaries: &[String],
) -> Result<ProbeSource, NotArchPath> {
    let given = |text: Option<&str>| {
        text.map(str::trim)
            .filter(|g| !g.is_empty())
            .map(str::to_string)
    };
    if let Some(image) = given(probe_image) {
        return Ok(ProbeSource::Image(image));
    }
    let mut binaries = std::collections::BTreeMap::new();
    for text in probe_binaries {
        let Some((arch, path)) = text
            .split_once('=')
            .filter(|(a, p)| !a.trim().is_empty() && !p.trim().is_empty())
        else {
            return Err(NotArchPath {
                given: text.clone(),
            });
        };
        binaries.insert(
            arch.trim().to_string(),
            std::path::PathBuf::from(path.trim()),
        );
    }
    Ok(ProbeSource::Delivered(Given {
        node_image: given(node_image),
        binaries,
    }))
}

/// Whether the probe image comes from `image`'s registry host (a delivered probe comes from
/// no registry).
pub fn probe_origin(image: &ImageRef, source: &ProbeSource) -> ProbeOrigin {
    let ProbeSource::Image(probe_image) = source else {
        return ProbeOrigin {
            same_registry: false,
            registry: String::new(),
        };
    };
    let registry = ImageRef::parse(probe_image)
        .map(|p| p.registry)
        .unwrap_or_else(|_| probe_image.to_string());
    ProbeOrigin {
        same_registry: registry == image.registry,
        registry,
    }
}

/// The validated settings of one run.
#[derive(Debug, Clone)]
pub struct FleetConfig {
    pub target: Target,
    pub image: String,
    pub probe: ProbeSource,
    /// `--probe-image-arch`: the architectures the probe image has; `None`: unknown.
    pub probe_arches: Option<Vec<String>>,
    pub probe_namespace: String,
    /// `--for`: the workload whose nodeSelector, affinity and tolerations decide eligibility.
    pub workload: Option<ObjectRef>,
    /// `--selector`: only nodes matching this label selector are read.
    pub selector: Option<String>,
    pub choice: Choice,
    pub full: bool,
    /// `--runtime-pull`: each probe pod also asks the node's runtime to pull over CRI.
    pub runtime_pull: bool,
    /// `--kubelet-pull`: after each probe pod, a pod in the workload's namespace that has the
    /// node's kubelet pull the image itself.
    pub kubelet_pull: bool,
    /// `--fresh-node`: each chosen pool also from a node its autoscaler creates for the run.
    pub fresh_node: bool,
    pub settings: RunSettings,
}

#[derive(Debug, Clone)]
pub struct RunSettings {
    pub namespace: String,
    pub parallel: usize,
    /// The whole run's deadline, pod starts and probes included.
    pub deadline: Duration,
    /// How often a running probe pod is asked for its phase.
    pub poll: Duration,
    /// Each probe pod's own time to start and to answer, apart from the run's deadline.
    pub budgets: Budgets,
    /// Whether the probe image shares the image's registry host.
    pub origin: ProbeOrigin,
    /// The client's request timeout: a watch is renewed within it.
    pub request_timeout: Duration,
    /// `--fresh-node-timeout`: how long a fresh probe pod may wait for its node.
    pub fresh_wait: Duration,
    /// Where each pod's steps are told while the run waits (a terminal's progress lines).
    pub progress: Option<Sink>,
}
