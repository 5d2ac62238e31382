//! What was read → findings: the pods' statuses and events go through the same conversion and
//! ranking as pasted text (`failure_text::input::from_objects`, `explain_each`), so a verdict
//! here equals `explain` of the same objects pasted; then each finding gets where it happened
//! (node, pool, cache state), its pull secrets and the next command. Pure.

use k8s_openapi::api::core::v1::Pod;

use super::cache::{Evidence, cache_state};
use super::keyring::matching_keys;
use super::read::{SecretLookup, Snapshot};
use crate::failure_text::{self, Explained};
use crate::image_ref::ImageRef;
use crate::pod;
use crate::pod::node::{NodeFacts, an_image_it_holds, facts};
use crate::report::findings::{
    CacheReport, FindingInput, HolderReport, NodeReport, PullSecretReport, WhereReport,
};

/// One finding per (pod, image) stuck on its pull, with its cluster context.
pub fn findings(snapshot: &Snapshot) -> Vec<(Explained, FindingInput)> {
    let failing = pod::stuck(&snapshot.pods);
    let messages = failure_text::input::from_objects(&failing, &snapshot.events);
    failure_text::explain_each(messages)
        .into_iter()
        .map(|e| {
            let extra = context(snapshot, &failing, &e);
            (e, extra)
        })
        .collect()
}

fn context(s: &Snapshot, failing: &[Pod], e: &Explained) -> FindingInput {
    let subject = &e.subject;
    let pod = failing
        .iter()
        .find(|p| p.metadata.name == subject.pod && p.metadata.namespace == subject.namespace);
    let Some(pod) = pod else {
        return FindingInput::default();
    };
    let node_name = pod::node_name(pod);
    let node = node_name
        .as_ref()
        .and_then(|n| s.nodes.iter().find(|x| x.metadata.name.as_ref() == Some(n)));
    let facts = node
        .map(facts)
        .or_else(|| node_name.as_deref().map(NodeFacts::named));
    let image = subject.image.clone().unwrap_or_default();
    let location = facts.as_ref().map(|f| {
        let cache = cache_state(&image, f, &s.nodes, &s.other_pods);
        WhereReport {
            node: node_report(f, s.now),
            cache: CacheReport {
                holders: cache
                    .holders
                    .iter()
                    .map(|h| HolderReport {
                        node: h.node.name.clone(),
                        pool: h.node.pool.as_ref().map(|p| p.1.clone()),
                        created: h.node.created.clone(),
                        evidence: match h.evidence {
                            Evidence::Running(_) => "running",
                            Evidence::Listed => "listed",
                        },
                        image_id: match &h.evidence {
                            Evidence::Running(id) => Some(id.clone()),
                            Evidence::Listed => None,
                        },
                    })
                    .collect(),
                cache_lie: cache.lie,
                summary: cache.summary,
            },
        }
    });
    let mut next_commands = Vec::new();
    if let Some(n) = &node_name {
        let (debug_image, why) = match node.and_then(an_image_it_holds) {
            Some(held) => (
                held,
                "an image it already holds: no pull through the broken path",
            ),
            None => (
                "IMAGE".to_string(),
                "pick an image the node already holds: the debug pod's own pull takes the broken path",
            ),
        };
        next_commands.push(format!(
            "kubectl debug node/{n} -it --profile=sysadmin --image={debug_image}   # a shell in the node's network ({why}); there: pullpath probe {image}"
        ));
    }
    let secrets = pull_secrets(s, pod, &image);
    if !s.read_secrets && !secrets.is_empty() {
        let name = subject.pod.clone().unwrap_or_default();
        next_commands.push(format!(
            "pullpath explain pod/{name} -n {} --read-secrets   # check the pull secrets' registries (RBAC get secrets)",
            subject.namespace.clone().unwrap_or_default()
        ));
    }
    FindingInput {
        workload: workload(pod),
        pool: facts
            .as_ref()
            .and_then(|f| f.pool.as_ref().map(|p| p.1.clone())),
        location,
        pull_secrets: secrets,
        next_commands,
    }
}

fn node_report(f: &NodeFacts, now: i64) -> NodeReport {
    NodeReport {
        name: f.name.clone(),
        pool: f.pool.as_ref().map(|p| p.1.clone()),
        pool_label: f.pool.as_ref().map(|p| p.0.clone()),
        created: f.created.clone(),
        age_seconds: f.created_seconds.map(|c| now - c),
        kubelet: f.kubelet.clone(),
        runtime: f.runtime.clone(),
        os_image: f.os_image.clone(),
        zone: f.zone.clone(),
    }
}

/// `Deployment/web` from a ReplicaSet owner whose name ends in the pod's `pod-template-hash`
/// (no ReplicaSet read needed); the controller's kind and name otherwise.
pub fn workload(pod: &Pod) -> Option<String> {
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))?;
    let hash = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("pod-template-hash"));
    if owner.kind == "ReplicaSet"
        && let Some(hash) = hash
        && let Some(deployment) = owner.name.strip_suffix(&format!("-{hash}"))
    {
        return Some(format!("Deployment/{deployment}"));
    }
    Some(format!("{}/{}", owner.kind, owner.name))
}

/// The pod's imagePullSecrets, then its service account's, each with what is known of it.
fn pull_secrets(s: &Snapshot, pod: &Pod, image: &str) -> Vec<PullSecretReport> {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let spec = pod.spec.as_ref();
    let mut names: Vec<(String, &'static str)> = spec
        .iter()
        .flat_map(|s| s.image_pull_secrets.iter().flatten())
        .map(|r| (r.name.clone(), "pod"))
        .collect();
    let account = spec
        .and_then(|s| s.service_account_name.clone())
        .unwrap_or_else(|| "default".into());
    if let Some(a) = s
        .accounts
        .iter()
        .find(|a| a.namespace == ns && a.name == account)
    {
        for name in a.pull_secrets.iter().flatten() {
            if !names.iter().any(|(n, _)| n == name) {
                names.push((name.clone(), "serviceaccount"));
            }
        }
    }
    let parsed = ImageRef::parse(image).ok();
    let registry = parsed
        .as_ref()
        .map_or(image.to_string(), |r| r.registry.clone());
    names
        .into_iter()
        .map(|(name, from)| {
            let lookup = s
                .secrets
                .iter()
                .find(|x| x.namespace == ns && x.name == name)
                .map_or(SecretLookup::NotRead, |x| x.lookup.clone());
            secret_report(name, from, &lookup, parsed.as_ref(), &registry, &ns)
        })
        .collect()
}

fn secret_report(
    name: String,
    from: &'static str,
    lookup: &SecretLookup,
    image: Option<&ImageRef>,
    registry: &str,
    ns: &str,
) -> PullSecretReport {
    let mut report = PullSecretReport {
        name,
        from,
        exists: None,
        secret_type: None,
        registries: Vec::new(),
        matches_image: None,
        note: String::new(),
    };
    match lookup {
        SecretLookup::NotRead => {
            report.note = "not read: --read-secrets (RBAC get secrets) checks that it exists, its type and which registries it holds".into();
        }
        SecretLookup::Unread(reason) => report.note = format!("could not be read: {reason}"),
        SecretLookup::Missing => {
            report.exists = Some(false);
            report.note = format!(
                "does not exist in {ns}: the kubelet skips it and pulls {registry} without it"
            );
        }
        SecretLookup::Found {
            secret_type,
            registries,
        } => {
            report.exists = Some(true);
            report.secret_type = Some(secret_type.clone());
            match registries {
                Err(why) => {
                    report.note = format!("holds no registry entry the kubelet reads ({why})")
                }
                Ok(keys) => {
                    let matching: Vec<&String> =
                        image.map_or_else(Vec::new, |i| matching_keys(keys, i));
                    report.matches_image = Some(!matching.is_empty());
                    report.note = if let Some(key) = matching.first() {
                        format!(
                            "its entry {key} matches {registry}: the kubelet passes it with this pull"
                        )
                    } else {
                        format!(
                            "holds entries for {} only: none matches {registry}, so the kubelet does not pass it for this image",
                            if keys.is_empty() {
                                "no registry".to_string()
                            } else {
                                keys.join(", ")
                            }
                        )
                    };
                    report.registries = keys.clone();
                }
            }
        }
    }
    report
}
