use super::reads::namespace_problem;

#[test]
fn a_missing_probe_namespace_says_how_to_create_it() {
    let problem = namespace_problem("pullpath", "probe namespace", None).expect("a problem");
    assert!(
        problem.contains("the probe namespace pullpath does not exist"),
        "{problem}"
    );
    assert!(problem.contains("deploy/namespace.yaml"), "{problem}");
    assert!(problem.contains("--probe-namespace"), "{problem}");
}

#[test]
fn a_terminating_namespace_refuses_new_pods_and_an_active_one_does_not() {
    let problem = namespace_problem(
        "shop",
        "workload's namespace (--kubelet-pull)",
        Some("Terminating"),
    )
    .expect("a problem");
    assert!(problem.contains("shop is being deleted"), "{problem}");
    assert!(problem.contains("-n"), "{problem}");
    assert_eq!(
        namespace_problem("shop", "probe namespace", Some("Active")),
        None
    );
    // An object without a status (as a stand-in or an old server may send) is usable.
    assert_eq!(namespace_problem("shop", "probe namespace", Some("")), None);
}
