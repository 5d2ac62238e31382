//! Advice for the node's own failures ([`NodeCause`]): who owns each, where to look, what will
//! not help. The sources of each message are cited in `failure_text::classify::node`.

use super::{Advice, Look};
use crate::vocab::{NodeCause, Owner};

const NETWORK_WONT_HELP: &str =
    "DNS, route, firewall or proxy changes: no request of the pull failed";
const CREDENTIALS_WONT_HELP: &str =
    "imagePullSecrets or registry credentials: the registry was not what refused";

/// The advice for `cause`, which replaces the layer's table.
pub(super) fn advise_node(cause: NodeCause) -> Advice {
    let looks = |places: &[&str]| places.iter().map(|p| Look::from(*p)).collect();
    let words = |items: &[&str]| items.iter().map(|w| (*w).to_string()).collect();
    match cause {
        NodeCause::PullPolicy => Advice {
            owner: Owner::ApplicationTeam,
            where_to_look: looks(&[
                "the container's imagePullPolicy: Never in the workload spec: the kubelet never pulls, so the image must already be on this node under exactly this name",
                "how the image reaches nodes without a pull (pre-loaded node image, `ctr -n k8s.io images import`, kind/minikube `image load`): a new or replaced node lacks it",
                "`crictl images` on the node: the name and tag the kubelet looks for, as the runtime stores it (docker.io/library/… for short names)",
            ]),
            will_not_help: words(&[
                NETWORK_WONT_HELP,
                CREDENTIALS_WONT_HELP,
                "restarting the pod: with pull policy Never nothing will fetch the image",
            ]),
        },
        NodeCause::InvalidName => Advice {
            owner: Owner::ApplicationTeam,
            where_to_look: looks(&[
                "the image reference in the pod spec: lowercase repository, no scheme (https://), no empty path component (//), no trailing slash, a tag after one colon or a digest after @",
                "the template or CI variable that wrote it (an empty or unexpanded variable leaves `:TAG` or `${…}`)",
            ]),
            will_not_help: words(&[NETWORK_WONT_HELP, CREDENTIALS_WONT_HELP]),
        },
        NodeCause::Inspect => Advice {
            owner: Owner::NodeOperator,
            where_to_look: looks(&[
                "the runtime on the node: `crictl inspecti IMAGE` and `systemctl status containerd` (the kubelet's ImageStatus call failed before any pull)",
                "the runtime's log (`journalctl -u containerd`) and its image store's disk: a corrupt or unreadable store, a runtime restarting",
            ]),
            will_not_help: words(&[NETWORK_WONT_HELP, CREDENTIALS_WONT_HELP]),
        },
        NodeCause::Disk => Advice {
            owner: Owner::NodeOperator,
            where_to_look: looks(&[
                "the node's image filesystem: `df -h /var/lib/containerd` (or /var/lib/docker, /var/lib/containers), and `crictl imagefsinfo`",
                "the kubelet's image garbage collection (imageGCHighThresholdPercent, imageGCLowThresholdPercent) and the OS disk size of the node pool: an image unpacks to more than it downloads",
                "`crictl rmi --prune` on the node frees unused images now; a larger OS disk or a smaller image fixes it for good",
            ]),
            will_not_help: words(&[
                NETWORK_WONT_HELP,
                CREDENTIALS_WONT_HELP,
                "pulling again: the download worked, the disk filled while writing the layers",
            ]),
        },
        NodeCause::Unpack => Advice {
            owner: Owner::NodeOperator,
            where_to_look: looks(&[
                "the runtime's log around the event (`journalctl -u containerd`): which layer failed to extract and why (the snapshotter, a mount, a file the layer writes)",
                "the snapshotter and its filesystem (overlayfs on /var/lib/containerd; free inodes with `df -i`), and the kernel log (`dmesg`)",
                "the image itself, when every node fails the same layer: a layer the snapshotter cannot apply (whiteouts, special files)",
            ]),
            will_not_help: words(&[NETWORK_WONT_HELP, CREDENTIALS_WONT_HELP]),
        },
        NodeCause::SlowTransfer => Advice {
            owner: Owner::NodeOperator,
            where_to_look: looks(&[
                "the image's size and the node's bandwidth to the blob host: `pullpath probe IMAGE --full` on the node times every layer",
                "containerd's image_pull_progress_timeout (CRI plugin, default 5m: a pull whose bytes stop for that long is cancelled) and max_concurrent_downloads in /etc/containerd/config.toml",
                "a proxy or firewall that throttles or stalls long downloads; a registry mirror or a smaller image",
            ]),
            will_not_help: words(&[
                "DNS changes or new routes: the transfer was under way, so the path exists",
                CREDENTIALS_WONT_HELP,
            ]),
        },
        NodeCause::PullDeadline => Advice {
            owner: Owner::NodeOperator,
            where_to_look: looks(&[
                "the runtime's log around the event (`journalctl -u containerd`): layer downloads in progress, or `cancel pulling image … because of no progress`, mean a slow transfer; a `dial tcp … i/o timeout` means no route to a registry or mirror",
                "the kubelet's runtimeRequestTimeout and containerd's image_pull_progress_timeout, against the image's size",
            ]),
            will_not_help: words(&[CREDENTIALS_WONT_HELP]),
        },
        NodeCause::PullQps => Advice {
            owner: Owner::NodeOperator,
            where_to_look: looks(&[
                "the kubelet's registryPullQPS and registryBurst (KubeletConfiguration): the kubelet refused the pull before asking the runtime",
                "how many pods on this node start at once (a DaemonSet roll-out, a node coming up)",
            ]),
            will_not_help: words(&[
                "credentials or a registry mirror: no request reached any registry",
            ]),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_matter_is_the_application_teams_and_the_node_s_the_operators() {
        assert_eq!(
            advise_node(NodeCause::PullPolicy).owner,
            Owner::ApplicationTeam
        );
        assert_eq!(
            advise_node(NodeCause::InvalidName).owner,
            Owner::ApplicationTeam
        );
        for cause in [
            NodeCause::Disk,
            NodeCause::Unpack,
            NodeCause::SlowTransfer,
            NodeCause::PullDeadline,
            NodeCause::PullQps,
            NodeCause::Inspect,
        ] {
            assert_eq!(advise_node(cause).owner, Owner::NodeOperator, "{cause}");
        }
    }

    #[test]
    fn no_node_failure_sends_anyone_to_the_registrys_5xx() {
        for cause in [
            NodeCause::PullPolicy,
            NodeCause::Disk,
            NodeCause::Unpack,
            NodeCause::SlowTransfer,
            NodeCause::PullDeadline,
            NodeCause::PullQps,
            NodeCause::InvalidName,
            NodeCause::Inspect,
        ] {
            let advice = advise_node(cause);
            assert!(!advice.will_not_help.is_empty(), "{cause}");
            assert!(
                advice
                    .where_to_look
                    .iter()
                    .all(|w| !w.to_string().contains("5xx")),
                "{cause}"
            );
        }
        let slow = advise_node(NodeCause::SlowTransfer);
        assert!(
            slow.where_to_look
                .iter()
                .any(|w| w.to_string().contains("image_pull_progress_timeout"))
        );
    }
}
