//! `--kubelet-pull` on one node: the pod that has the node's kubelet pull the image itself.

use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};

use crate::fleet::config::RunSettings;
use crate::fleet::kubelet_pull::{self, KubeletPull, KubeletPullPlan, NoKubeletAnswer};
use crate::fleet::run_objects::{api_error, at_once};

/// The kubelet's own pull on one node: create the kubelet-pull pod, read it each poll interval
/// until its status says how the pull went (within the start budget), delete it. One get per
/// poll for the node's one pod: the opt-in costs a few requests per node, not per cluster.
pub(super) async fn kubelet_pull_on(
    api: &Api<Pod>,
    plan: &KubeletPullPlan,
    settings: &RunSettings,
) -> KubeletPull {
    if let Err(e) = api
        .create(&PostParams::default(), &kubelet_pull::pod(plan))
        .await
    {
        return KubeletPull::NoAnswer {
            why: NoKubeletAnswer::NotCreated {
                pod: format!("{}/{}", plan.namespace, plan.name),
                error: api_error(&e),
            },
        };
    }
    let until = Instant::now() + settings.budgets.start;
    let answer = loop {
        tokio::time::sleep(settings.poll).await;
        match api.get(&plan.name).await {
            Ok(pod) => {
                if let Some(pull) = kubelet_pull::read(&pod) {
                    break pull;
                }
            }
            Err(e) => {
                break KubeletPull::NoAnswer {
                    why: NoKubeletAnswer::Unread {
                        error: api_error(&e),
                    },
                };
            }
        }
        if Instant::now() > until {
            break KubeletPull::NoAnswer {
                why: NoKubeletAnswer::Silent {
                    budget: settings.budgets.start,
                },
            };
        }
    };
    let _ = api.delete(&plan.name, &at_once()).await;
    answer
}
