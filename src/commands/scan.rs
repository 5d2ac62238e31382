//! `pullpath scan`: every pod waiting on an image, from the Kubernetes API; and the same read of
//! one object for `explain pod/NAME`.

use crate::cli::{KubeArgs, Output, ScanArgs};
use crate::cluster::{self, ObjectRef};
use crate::render::{self, Style};
use crate::{configure, exit, report};

/// Scan the namespace (or all) and print the findings, worst first.
pub fn run(args: ScanArgs) -> anyhow::Result<u8> {
    Ok(read_cluster(&args.kube, args.all_namespaces, args.output, None).status)
}

/// What a cluster read printed: its exit status, and every image a finding is about.
pub struct ClusterRead {
    pub status: u8,
    pub images: Vec<String>,
}

/// Read the cluster (one object, or a scan), explain each failing pull as `explain` would, and
/// print the findings. A cluster that cannot be read is one line on stderr and its exit status
/// (`exit::for_cluster_error`).
pub fn read_cluster(
    kube: &KubeArgs,
    all_namespaces: bool,
    output: Output,
    object: Option<&ObjectRef>,
) -> ClusterRead {
    let not_read = |status| ClusterRead {
        status,
        images: Vec::new(),
    };
    let target = configure::cluster_target(kube, all_namespaces);
    let Some(runtime) = super::async_runtime() else {
        return not_read(exit::INTERNAL);
    };
    let read = runtime.block_on(async {
        let session = cluster::read::connect(&target).await?;
        match object {
            Some(object) => session.read_object(&target, object).await,
            None => session.read_scan(&target).await,
        }
    });
    let snapshot = match read {
        Ok(snapshot) => snapshot,
        Err(e) => return not_read(super::cluster_failed(&e)),
    };
    let findings = cluster::findings::findings(&snapshot);
    let scope = report::findings::ScopeReport {
        namespace: snapshot.namespace.clone(),
        all_namespaces: snapshot.all_namespaces,
        pods_read: snapshot.pods.len(),
    };
    let unread = snapshot
        .unread
        .iter()
        .map(|u| report::findings::UnreadReport {
            what: u.what.clone(),
            reason: u.reason.clone(),
        })
        .collect();
    let command = if object.is_some() { "explain" } else { "scan" };
    let report = report::findings::findings_report(command, &findings, Some(scope), unread);
    super::print_report(output, &report, |r| {
        render::findings::findings(r, Style::detect())
    });
    let mut images: Vec<String> = findings
        .iter()
        .filter(|(e, _)| e.explanation.verdict().is_some())
        .filter_map(|(e, _)| e.subject.image.clone())
        .collect();
    images.sort();
    images.dedup();
    ClusterRead {
        status: exit::for_verdict(&report.verdict),
        images,
    }
}
