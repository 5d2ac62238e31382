//! fleet against an API server that throttles (issue 45): the stand-in rejects requests with
//! 429 and `Retry-After: 1` as priority and fairness does, and fleet waits and sends each again
//! as client-go would (src/cluster/retry.rs). No lab: the stand-in and the fake kubelet are
//! in this process, every address 127.0.0.1.

#[path = "support/canned_fleet.rs"]
mod canned_fleet;
#[path = "support/fake_kubelet.rs"]
mod fake_kubelet;
#[path = "support/kube_api.rs"]
mod kube_api;

use std::time::Duration;

use canned_fleet::{Setup, run};

const SETUP: Setup = Setup {
    nodes: 6,
    delay: Duration::from_millis(200),
    parallel: 3,
    poll: "100ms",
    throttle: (0, 0),
};

/// Every node answers, no probe pod is left, and the requests served other than the per-poll
/// lists are the unthrottled run's: each rejected request is sent again and nothing else is
/// asked (the per-poll lists follow the run's length).
#[test]
fn a_throttled_run_answers_every_node_and_retries_only_the_rejected_requests() {
    let calm = run(SETUP);
    assert!(calm.all_passed, "{}", calm.stderr);
    assert_eq!(calm.rejected, 0);
    // Every other request, until 12 were: fleet's first reads come one at a time, so each is
    // rejected once and passes when sent again.
    const REJECTED: u64 = 12;
    let throttled = run(Setup {
        throttle: (2, REJECTED),
        ..SETUP
    });
    assert_eq!(throttled.status, Some(0), "{}", throttled.stderr);
    assert!(throttled.all_passed, "{}", throttled.stderr);
    assert_eq!(throttled.rejected, REJECTED);
    let other = |c: &canned_fleet::Cost| c.requests - c.lists;
    assert_eq!(
        other(&throttled),
        other(&calm),
        "calm: {} requests, {} lists; throttled: {}, {}",
        calm.requests,
        calm.lists,
        throttled.requests,
        throttled.lists
    );
}
