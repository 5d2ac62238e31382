//! The run's owner: one object every other object of the run names in its `ownerReferences`,
//! so that the API's garbage collector removes whatever a killed run left behind, with no
//! `--cleanup` and no one watching.
//!
//! The owner is a Job that never runs a pod (`parallelism: 0`) and expires by itself: the Job
//! controller fails it once `activeDeadlineSeconds` have passed since it started
//! (`pkg/controller/job/job_controller.go`, `pastActiveDeadline`: `DeadlineExceeded`), the TTL
//! controller deletes it as soon as it finished (`ttlSecondsAfterFinished: 0`,
//! `pkg/controller/ttlafterfinished`), and the garbage collector then deletes every dependent
//! (`pkg/controller/garbagecollector`: a dependent whose owners are all gone is deleted). The
//! references are not controller references, so the Job controller never counts or adopts the
//! run's pods. Owners must live in their dependents' namespace, so the kubelet-pull pods, which
//! run in the workload's namespace, are not owned: `--cleanup` removes those by label.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use super::pod_base::{COMPONENT_LABEL, MANAGED_BY, RUN_LABEL};
use super::run_objects::api_error;

/// The owner's `app.kubernetes.io/component`.
pub const OWNER_COMPONENT: &str = "fleet-run";

/// How long after the run's deadline the owner expires: by then a live run has deleted its
/// objects itself; a killed one's go with the owner.
pub const AFTER_THE_DEADLINE: Duration = Duration::from_secs(60);

/// The owner Job of run `run_id` in `namespace`, expiring `AFTER_THE_DEADLINE` after a run of
/// `deadline`.
pub fn owner_job(run_id: &str, namespace: &str, deadline: Duration) -> Job {
    let expires = (deadline + AFTER_THE_DEADLINE).as_secs().max(1);
    let labels = json!({
        MANAGED_BY.0: MANAGED_BY.1,
        "app.kubernetes.io/name": "pullpath",
        COMPONENT_LABEL: OWNER_COMPONENT,
        RUN_LABEL: run_id,
    });
    let object = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": format!("pullpath-{run_id}"), "namespace": namespace, "labels": labels},
        "spec": {
            // Never a pod: the Job exists only to be owned by, and to expire.
            "parallelism": 0,
            "completions": 1,
            "backoffLimit": 0,
            "activeDeadlineSeconds": expires,
            "ttlSecondsAfterFinished": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": false,
                    "containers": [{"name": "owner", "image": "registry.k8s.io/pause:3.10"}],
                },
            },
        },
    });
    // Only Job fields of the right types: deserializing cannot fail.
    serde_json::from_value(object).expect("a Job")
}

/// The reference a dependent carries to the created `job` (`None` until it has a uid).
pub fn reference(job: &Job) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: job.metadata.name.clone()?,
        uid: job.metadata.uid.clone()?,
        controller: None,
        block_owner_deletion: None,
    })
}

/// Why a run has no owner: what a killed run would then leave. `Display` is the report's
/// `cleanup.unowned`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unowned {
    /// The create was refused (a role without `create` on Jobs, as deploy/rbac-fleet.yaml
    /// granted before): the apiserver's answer in one line.
    #[error(
        "the run's objects have no owner (cannot create Job {job}: {answer}): a killed run leaves them until `pullpath fleet --cleanup`"
    )]
    Refused { job: String, answer: String },
    #[error("the run's objects have no owner (the API answered Job {job} without a uid)")]
    NoUid { job: String },
}

/// Create the run's owner. Refused: the run goes on without one, and says so.
pub async fn create(
    client: &kube::Client,
    namespace: &str,
    run_id: &str,
    deadline: Duration,
) -> Result<OwnerReference, Unowned> {
    let api: Api<Job> = Api::namespaced(client.clone(), namespace);
    let job = owner_job(run_id, namespace, deadline);
    let name = job.metadata.name.clone().unwrap_or_default();
    match api.create(&PostParams::default(), &job).await {
        Ok(created) => reference(&created).ok_or(Unowned::NoUid { job: name }),
        Err(e) => Err(Unowned::Refused {
            job: name,
            answer: api_error(&e),
        }),
    }
}

/// Delete the owner at the run's end (its dependents were deleted already; the collector
/// removes any the run missed).
pub async fn delete(client: &kube::Client, namespace: &str, owner: &OwnerReference) {
    let api: Api<Job> = Api::namespaced(client.clone(), namespace);
    let background = DeleteParams {
        propagation_policy: Some(kube::api::PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    let _ = api.delete(&owner.name, &background).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_runs_no_pod_and_expires_after_the_run() {
        let job = owner_job("ab12", "pullpath", Duration::from_secs(300));
        let spec = job.spec.as_ref().expect("spec");
        assert_eq!(spec.parallelism, Some(0));
        assert_eq!(spec.active_deadline_seconds, Some(360));
        assert_eq!(spec.ttl_seconds_after_finished, Some(0));
        let labels = job.metadata.labels.as_ref().expect("labels");
        assert_eq!(labels[RUN_LABEL], "ab12");
        assert_eq!(labels[COMPONENT_LABEL], OWNER_COMPONENT);
        // Not a controller reference: the Job controller leaves the run's pods alone.
        let mut created = job.clone();
        created.metadata.uid = Some("uid-1".into());
        let reference = reference(&created).expect("a reference");
        assert_eq!(reference.controller, None);
        assert_eq!(
            (reference.kind.as_str(), reference.uid.as_str()),
            ("Job", "uid-1")
        );
        assert_eq!(super::reference(&job), None, "no uid before it is created");
    }
}
