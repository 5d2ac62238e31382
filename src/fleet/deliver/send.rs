//! The delivered objects on the API: created before the run's pods, deleted with them (by the
//! run's label) whatever ends the run. The networked part of `deliver`.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, PostParams};

use super::{Payload, config_map, objects};
use crate::fleet::pod_base::RUN_LABEL;
use crate::fleet::run_objects::{self, Cleanup, RunObjectsRefused};

/// What a run sent to the API to deliver its binaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    pub objects: usize,
    /// The request bodies' bytes (JSON: the binary data in base64).
    pub bytes: u64,
}

/// Create every payload's objects in `namespace`, owned by the run's `owner` when it has one;
/// the first refusal ends it (the caller deletes what was made).
pub async fn create(
    client: &kube::Client,
    namespace: &str,
    run_id: &str,
    payloads: &[Payload],
    owner: Option<&OwnerReference>,
) -> Result<Sent, RunObjectsRefused> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let mut sent = Sent::default();
    for payload in payloads {
        for (name, key, bytes) in objects(run_id, payload) {
            let mut object = config_map(run_id, namespace, &name, &key, bytes);
            object.metadata.owner_references = owner.map(|o| vec![o.clone()]);
            let body = serde_json::to_vec(&object).map_or(0, |b| b.len() as u64);
            api.create(&PostParams::default(), &object)
                .await
                .map_err(|e| RunObjectsRefused::Create {
                    name: name.clone(),
                    namespace: namespace.to_string(),
                    error: e.into(),
                })?;
            sent.objects += 1;
            sent.bytes += body;
        }
    }
    Ok(sent)
}

/// Delete the run's delivered objects, then count what is left.
pub async fn delete(
    client: &kube::Client,
    namespace: &str,
    run_id: &str,
) -> Result<Cleanup, RunObjectsRefused> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    run_objects::delete_run(&api, &format!("{RUN_LABEL}={run_id}")).await
}
