//! `pullpath azure`: the real binary on every export set of tests/fixtures/azure/ (one per
//! scenario of issue 14; shapes and sources in that folder's README), its JSON checked against
//! docs/azure-report.schema.json, its text read as a person reads it, and malformed exports.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn fixture(scenario: &str) -> PathBuf {
    support::repo().join("tests/fixtures/azure").join(scenario)
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("pullpath runs")
}

/// Validate against docs/azure-report.schema.json; panics listing every violation.
fn assert_valid(report: &Value) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(support::repo().join("docs/azure-report.schema.json"))
            .expect("schema file"),
    )
    .expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "report violates docs/azure-report.schema.json:\n{}\n{report:#}",
        errors.join("\n")
    );
}

/// `azure analyse DIR -o json`: the exit status and the report, validated.
fn analyse_dir(dir: &Path, extra: &[&str]) -> (i32, Value) {
    let dir = dir.to_str().expect("utf-8 path");
    let mut args = vec!["azure", "analyse", dir, "-o", "json"];
    args.extend_from_slice(extra);
    let out = run(&args);
    let code = out.status.code().expect("exited, not killed");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); exit {code}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_valid(&report);
    (code, report)
}

fn analyse(scenario: &str) -> (i32, Value) {
    analyse_dir(&fixture(scenario), &[])
}

fn endpoint<'a>(report: &'a Value, pool: &str, host: &str) -> &'a Value {
    report["pools"]
        .as_array()
        .expect("pools")
        .iter()
        .find(|p| p["pool"] == pool)
        .unwrap_or_else(|| panic!("no pool {pool}: {report:#}"))["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .find(|e| e["host"] == host)
        .unwrap_or_else(|| panic!("pool {pool} has no endpoint {host}: {report:#}"))
}

/// What a failing endpoint must name.
struct Expect<'a> {
    pool: &'a str,
    host: &'a str,
    layer: &'a str,
    mechanism: Option<&'a str>,
    step: &'a str,
    field: &'a str,
    /// A fragment of the resource id (or file) that holds the field.
    resource: &'a str,
}

/// A failure at layer `route` on a registry or mirror hop (no blob mechanism).
fn on_route<'a>(
    pool: &'a str,
    host: &'a str,
    step: &'a str,
    field: &'a str,
    resource: &'a str,
) -> Expect<'a> {
    Expect {
        pool,
        host,
        layer: "route",
        mechanism: None,
        step,
        field,
        resource,
    }
}

fn assert_fails(report: &Value, e: &Expect) {
    let got = endpoint(report, e.pool, e.host);
    let v = &got["verdict"];
    assert_eq!(v["passed"], false, "{got:#}");
    assert_eq!(v["decided"], true, "{got:#}");
    assert_eq!(v["layer"], e.layer, "{got:#}");
    match e.mechanism {
        Some(m) => assert_eq!(v["mechanism"], m, "{got:#}"),
        None => assert!(v.get("mechanism").is_none(), "{got:#}"),
    }
    assert_eq!(got["step"], e.step, "{got:#}");
    assert_eq!(got["field"], e.field, "{got:#}");
    let resource = got["resource"].as_str().expect("resource");
    assert!(
        resource.contains(e.resource),
        "{resource} should name {}",
        e.resource
    );
    let show = got["show"].as_str().expect("show");
    assert!(show.starts_with("az "), "{show}");
    assert!(
        got["where_to_look"][0]
            .as_str()
            .is_some_and(|w| w.contains(e.field)),
        "where_to_look starts with the field: {got:#}"
    );
}

fn assert_passes(report: &Value, pool: &str, host: &str) {
    let got = endpoint(report, pool, host);
    assert_eq!(got["verdict"]["passed"], true, "{got:#}");
}

const LOGIN: &str = "contosoreg.azurecr.io";
const DATA: &str = "contosoreg.westeurope.data.azurecr.io";
const MIRROR: &str = "mirror.corp.example";
const STORAGE: &str = "*.blob.core.windows.net";

#[test]
fn healthy_hub_and_spoke_passes_every_pool_and_endpoint() {
    let (code, report) = analyse("healthy");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["verdict"]["passed"], true);
    for pool in ["system", "user"] {
        for host in [LOGIN, DATA, MIRROR] {
            assert_passes(&report, pool, host);
        }
        assert_eq!(endpoint(&report, pool, LOGIN)["resolves_to"], "10.0.1.5");
        assert_eq!(endpoint(&report, pool, DATA)["resolves_to"], "10.0.1.6");
        let mirror = endpoint(&report, pool, MIRROR);
        assert!(
            mirror["checks"]
                .as_array()
                .expect("checks")
                .iter()
                .any(|c| c
                    .as_str()
                    .is_some_and(|c| c.contains("back into the tunnel"))),
            "the return path is a check for the on-premises team: {mirror:#}"
        );
    }
    assert!(report["unconcluded"].as_array().expect("list").is_empty());
}

#[test]
fn zone_not_linked_to_the_spoke_fails_dns_on_the_zone_links() {
    let (code, report) = analyse("zone-not-linked");
    assert_eq!(code, 10);
    for pool in ["system", "user"] {
        let expect = Expect {
            pool,
            host: LOGIN,
            layer: "dns",
            mechanism: None,
            step: "dns",
            field: "virtualNetworkLinks",
            resource: "privateDnsZones/privatelink.azurecr.io",
        };
        assert_fails(&report, &expect);
        assert_fails(
            &report,
            &Expect {
                host: DATA,
                layer: "blob",
                mechanism: Some("dns"),
                ..expect
            },
        );
        let login = endpoint(&report, pool, LOGIN);
        assert!(
            login["observed"]
                .as_str()
                .expect("observed")
                .contains("vnet-spoke")
        );
        assert_eq!(login["verdict"]["owner"], "dns-team");
        assert!(
            login["verdict"]["cause"]
                .as_str()
                .expect("cause")
                .contains("403")
        );
    }
    assert_eq!(report["decided_by"]["pool"], "system");
}

#[test]
fn missing_data_endpoint_record_fails_only_the_data_endpoint() {
    let (code, report) = analyse("data-record-missing");
    assert_eq!(code, 20, "blob layer");
    for pool in ["system", "user"] {
        assert_passes(&report, pool, LOGIN);
        assert_fails(
            &report,
            &Expect {
                pool,
                host: DATA,
                layer: "blob",
                mechanism: Some("dns"),
                step: "dns",
                field: "aRecords (contosoreg.westeurope.data)",
                resource: "privatelink.azurecr.io/A/contosoreg.westeurope.data",
            },
        );
        assert!(
            endpoint(&report, pool, DATA)["expected"]
                .as_str()
                .expect("expected")
                .contains("10.0.1.6"),
            "the wanted address comes from the private endpoint"
        );
    }
}

#[test]
fn custom_dns_server_in_an_unlinked_vnet_cannot_forward_to_the_zone() {
    let (code, report) = analyse("custom-dns-no-forward");
    assert_eq!(code, 10);
    let login = endpoint(&report, "system", LOGIN);
    assert_fails(
        &report,
        &Expect {
            pool: "system",
            host: LOGIN,
            layer: "dns",
            mechanism: None,
            step: "dns",
            field: "virtualNetworkLinks",
            resource: "privatelink.azurecr.io",
        },
    );
    assert_eq!(login["observed"], "no link to VNet vnet-hub");
    assert!(
        login["verdict"]["cause"]
            .as_str()
            .expect("cause")
            .contains("10.0.2.4")
    );
}

#[test]
fn spoke_without_use_remote_gateways_drops_the_on_premises_endpoint() {
    let (code, report) = analyse("no-use-remote-gateways");
    assert_eq!(code, 11);
    for pool in ["system", "user"] {
        assert_passes(&report, pool, LOGIN);
        assert_fails(
            &report,
            &Expect {
                pool,
                host: MIRROR,
                layer: "route",
                mechanism: None,
                step: "peering",
                field: "useRemoteGateways",
                resource: "vnet-spoke/virtualNetworkPeerings/spoke-to-hub",
            },
        );
    }
}

#[test]
fn hub_without_allow_gateway_transit_drops_the_on_premises_endpoint() {
    let (code, report) = analyse("no-gateway-transit");
    assert_eq!(code, 11);
    assert_fails(
        &report,
        &on_route(
            "user",
            MIRROR,
            "peering",
            "allowGatewayTransit",
            "vnet-hub/virtualNetworkPeerings/hub-to-spoke",
        ),
    );
}

#[test]
fn bgp_propagation_disabled_on_one_pools_subnet_fails_that_pool_only() {
    let (code, report) = analyse("bgp-propagation-disabled");
    assert_eq!(code, 11);
    assert_fails(
        &report,
        &on_route(
            "system",
            MIRROR,
            "route",
            "disableBgpRoutePropagation",
            "routeTables/rt-system",
        ),
    );
    assert_passes(&report, "user", MIRROR);
}

#[test]
fn second_pool_without_the_route_table_is_named_against_the_first() {
    let (code, report) = analyse("second-pool-no-route-table");
    assert_eq!(code, 11, "the user pool certainly fails");
    assert_fails(
        &report,
        &on_route(
            "user",
            MIRROR,
            "route",
            "routeTable",
            "vnet-spoke/subnets/aks-user",
        ),
    );
    let user = endpoint(&report, "user", MIRROR);
    assert!(
        user["expected"]
            .as_str()
            .expect("expected")
            .contains("rt-aks")
    );
    // The system pool's route goes to the hub's appliance: the exports cannot decide the rest.
    let system = endpoint(&report, "system", MIRROR);
    assert_eq!(system["verdict"]["decided"], false, "{system:#}");
    assert_eq!(system["field"], "nextHopIpAddress");
    assert_eq!(report["decided_by"]["pool"], "user");
}

#[test]
fn default_route_to_an_appliance_is_undecided_and_names_the_appliance() {
    let (code, report) = analyse("udr-appliance");
    assert_eq!(
        code, 3,
        "undecided: the appliance's rules are not in the exports"
    );
    let system = report["pools"][0].clone();
    assert_eq!(
        system["routes"], "effective",
        "the system pool's NIC was exported"
    );
    assert_eq!(report["pools"][1]["routes"], "rebuilt");
    for pool in ["system", "user"] {
        for (host, layer) in [(LOGIN, "route"), (STORAGE, "blob")] {
            let got = endpoint(&report, pool, host);
            let v = &got["verdict"];
            assert_eq!(v["decided"], false, "{got:#}");
            assert_eq!(v["layer"], layer);
            assert_eq!(got["step"], "route");
            assert_eq!(got["field"], "nextHopIpAddress");
            assert_eq!(got["observed"], "10.0.3.4");
            assert!(
                got["resource"]
                    .as_str()
                    .expect("resource")
                    .ends_with("routeTables/rt-aks/routes/default-to-firewall"),
                "{got:#}"
            );
            assert!(v["decides"].as_str().expect("decides").contains("10.0.3.4"));
        }
        // The on-premises prefix is more specific than the appliance's 0.0.0.0/0.
        assert_passes(&report, pool, MIRROR);
    }
}

#[test]
fn disconnected_peering_drops_the_private_endpoint() {
    let (code, report) = analyse("peering-disconnected");
    assert_eq!(code, 11);
    for (host, layer, mechanism) in [(LOGIN, "route", None), (DATA, "blob", Some("route"))] {
        assert_fails(
            &report,
            &Expect {
                pool: "system",
                host,
                layer,
                mechanism,
                step: "peering",
                field: "peeringState",
                resource: "spoke-to-hub",
            },
        );
    }
    assert_eq!(
        endpoint(&report, "system", LOGIN)["observed"],
        "Disconnected"
    );
}

#[test]
fn nsg_denying_443_to_the_endpoint_subnet_is_named_by_rule() {
    let (code, report) = analyse("nsg-deny-private-endpoint");
    assert_eq!(code, 11);
    for pool in ["system", "user"] {
        assert_fails(
            &report,
            &Expect {
                pool,
                host: LOGIN,
                layer: "route",
                mechanism: None,
                step: "nsg",
                field: "securityRules/deny-endpoints",
                resource: "networkSecurityGroups/nsg-aks/securityRules/deny-endpoints",
            },
        );
        assert_passes(&report, pool, MIRROR);
    }
    // The user pool's verdict came from its NIC's effective NSG export.
    let user = endpoint(&report, "user", LOGIN);
    assert!(
        user["verdict"]["cause"]
            .as_str()
            .expect("cause")
            .contains("effective")
    );
}

#[test]
fn public_access_disabled_while_pools_resolve_the_public_address_is_forbidden() {
    let (code, report) = analyse("public-access-disabled");
    assert_eq!(code, 15, "forbidden");
    assert_fails(
        &report,
        &Expect {
            pool: "system",
            host: LOGIN,
            layer: "forbidden",
            mechanism: None,
            step: "registry-rules",
            field: "publicNetworkAccess",
            resource: "registries/contosoreg",
        },
    );
    let login = endpoint(&report, "system", LOGIN);
    assert_eq!(login["resolves_to"], "public address");
    assert!(
        login["verdict"]["cause"]
            .as_str()
            .expect("cause")
            .contains("not allowed access")
    );
    assert_fails(
        &report,
        &Expect {
            pool: "user",
            host: DATA,
            layer: "blob",
            mechanism: Some("forbidden"),
            step: "registry-rules",
            field: "publicNetworkAccess",
            resource: "contosoreg",
        },
    );
}

#[test]
fn mixed_case_ids_keys_and_values_read_as_the_healthy_network() {
    let (code, report) = analyse("mixed-case-ids");
    assert_eq!(code, 0, "{report:#}");
    for pool in ["system", "user"] {
        for host in [LOGIN, DATA, MIRROR] {
            assert_passes(&report, pool, host);
        }
    }
    assert_eq!(endpoint(&report, "user", LOGIN)["resolves_to"], "10.0.1.5");
}

#[test]
fn arm_shaped_exports_read_like_az_ones() {
    let (code, report) = analyse("arm-shaped");
    let (az_code, az_report) = analyse("no-gateway-transit");
    assert_eq!(code, az_code);
    for pool in ["system", "user"] {
        for host in [LOGIN, DATA, MIRROR] {
            let arm = endpoint(&report, pool, host);
            let az = endpoint(&az_report, pool, host);
            assert_eq!(arm["verdict"], az["verdict"], "{pool} {host}");
            assert_eq!(arm["field"], az["field"]);
            assert_eq!(arm["resource"], az["resource"]);
        }
    }
    assert_fails(
        &report,
        &on_route(
            "system",
            MIRROR,
            "peering",
            "allowGatewayTransit",
            "hub-to-spoke",
        ),
    );
}

#[test]
fn pool_flag_restricts_the_analysis_and_refuses_an_unknown_pool() {
    let (code, report) = analyse_dir(&fixture("bgp-propagation-disabled"), &["--pool", "USER"]);
    assert_eq!(code, 0, "only the healthy pool");
    assert_eq!(report["pools"].as_array().expect("pools").len(), 1);
    assert_eq!(report["pools"][0]["pool"], "user");
    let dir = fixture("healthy");
    let out = run(&[
        "azure",
        "analyse",
        dir.to_str().expect("path"),
        "--pool",
        "gpu",
    ]);
    assert_eq!(out.status.code(), Some(64));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\"gpu\"") && stderr.contains("system, user"),
        "{stderr}"
    );
}

#[test]
fn text_output_leads_with_the_pool_the_endpoint_and_the_field() {
    let dir = fixture("no-use-remote-gateways");
    let out = run(&["azure", "analyse", dir.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(11));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(!text.contains('\x1b'), "no colour when NO_COLOR is set");
    assert!(
        text.contains("pool system  (VNet vnet-spoke, subnet aks-system;"),
        "{text}"
    );
    assert!(
        text.contains("✓ contosoreg.azurecr.io [login-server]"),
        "{text}"
    );
    assert!(
        text.contains("✗ mirror.corp.example [outside-azure]"),
        "{text}"
    );
    assert!(
        text.contains("field       useRemoteGateways: false (want true)"),
        "{text}"
    );
    assert!(
        text.contains("show        az network vnet peering show --ids"),
        "{text}"
    );
    assert!(text.contains("owner       network team"), "{text}");
    assert!(text.contains("won't help  - imagePullSecrets"), "{text}");
    assert_eq!(
        text.lines().last(),
        Some("✗ route · pool system · mirror.corp.example")
    );
}

#[test]
fn commands_prints_a_read_only_script_bash_accepts() {
    let out = run(&[
        "azure",
        "commands",
        "--cluster",
        "aks-prod",
        "-g",
        "rg-aks",
        "--registry",
        "contosoreg",
        "--out",
        "exports dir",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8(out.stdout).expect("utf-8");
    for needed in [
        "az aks show",
        "az aks nodepool list",
        "az network vnet list",
        "az network route-table list",
        "az network nsg list",
        "az network private-endpoint list",
        "az network private-dns zone list",
        "az network private-dns link vnet list",
        "az network private-dns record-set a list",
        "az acr show -n",
        "az acr show-endpoints",
        "az network vnet-gateway show",
        "az network local-gateway show",
        "az network nic show-effective-route-table",
        "az network nic list-effective-nsg",
        "OUT='exports dir'",
    ] {
        assert!(script.contains(needed), "{needed} missing from:\n{script}");
    }
    // `bash -n` parses without running anything.
    let dir = scratch("commands");
    let path = dir.join("export.sh");
    std::fs::write(&path, &script).expect("write script");
    let check = Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .expect("bash runs");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn explain_points_acr_dns_failures_to_pullpath_azure() {
    let out = run(&[
        "explain",
        "-o",
        "json",
        r#"Failed to pull image "contosoreg.azurecr.io/app:v1": failed to resolve reference "contosoreg.azurecr.io/app:v1": failed to do request: Head "https://contosoreg.azurecr.io/v2/app/manifests/v1": dial tcp: lookup contosoreg.azurecr.io on 10.1.0.10:53: no such host"#,
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["verdict"]["layer"], "dns");
    let look = report["where_to_look"].to_string();
    assert!(look.contains("pullpath azure commands"), "{look}");
    assert!(look.contains("--registry contosoreg"), "{look}");
    // The azure report itself does not send the reader to itself.
    let (_, azure) = analyse("zone-not-linked");
    let own = endpoint(&azure, "system", LOGIN)["where_to_look"].to_string();
    assert!(!own.contains("pullpath azure"), "{own}");
}

/// A fresh directory of its own for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pullpath-azure-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A copy of a fixture to break.
fn copy_of(scenario: &str, name: &str) -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("dir");
        for entry in std::fs::read_dir(from).expect("read fixture").flatten() {
            let target = to.join(entry.file_name());
            if entry.path().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).expect("copy");
            }
        }
    }
    let dir = scratch(name);
    copy(&fixture(scenario), &dir);
    dir
}

fn unconcluded(report: &Value) -> String {
    report["unconcluded"]
        .as_array()
        .expect("unconcluded")
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_malformed_export_is_named_with_its_command_and_the_rest_still_runs() {
    let dir = copy_of("healthy", "malformed-vnets");
    std::fs::write(
        dir.join("vnets.json"),
        "[{\"id\": \"/sub/x\", \"subnets\": [",
    )
    .expect("write");
    let (code, report) = analyse_dir(&dir, &[]);
    assert_eq!(code, 3, "undecided, not a crash: {report:#}");
    let notes = unconcluded(&report);
    assert!(
        notes.contains("vnets.json is unreadable (not JSON"),
        "{notes}"
    );
    assert!(notes.contains("az network vnet list"), "{notes}");
    let login = endpoint(&report, "system", LOGIN);
    assert_eq!(login["verdict"]["decided"], false);
    assert!(
        login["verdict"]["decides"]
            .as_str()
            .expect("decides")
            .contains("az network vnet list")
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn wrong_types_garbage_and_empty_files_never_panic() {
    let dir = copy_of("healthy", "garbage");
    let garbage: &[(&str, &[u8])] = &[
        ("aks.json", b"[1, 2, 3]"),
        ("nodepools.json", br#"[{"name": 7, "vnetSubnetId": {"id": []}}, null, "x"]"#),
        ("route-tables.json", br#"{"value": [{"id": "/rt", "routes": [{"addressPrefix": 5, "nextHopType": null}]}]}"#),
        ("nsgs.json", br#"[{"id": "/n", "securityRules": [{"name": "r", "priority": "high", "direction": 1}]}]"#),
        ("acr.json", b"\xff\xfe\x00garbage"),
        ("acr-endpoints.json", b"   \n"),
        ("private-endpoints.json", br#"[{"id": "/pe", "customDnsConfigs": [{"fqdn": 1, "ipAddresses": "10.0.0.1"}]}]"#),
        ("local-gateways.json", br#"{"value": {"not": "a list"}}"#),
    ];
    for (file, bytes) in garbage {
        std::fs::write(dir.join(file), bytes).expect("write");
    }
    let (code, report) = analyse_dir(&dir, &[]);
    assert!(
        matches!(code, 0 | 3 | 10..=21),
        "a verdict, not a crash: {code}"
    );
    let notes = unconcluded(&report);
    assert!(notes.contains("acr.json is unreadable"), "{notes}");
    assert!(notes.contains("az acr show"), "{notes}");
    assert!(
        notes.contains("acr-endpoints.json is unreadable (empty"),
        "{notes}"
    );
    let out = run(&["azure", "analyse", dir.to_str().expect("path")]);
    assert!(
        out.status.code().is_some_and(|c| c != 101 && c != 70),
        "text view too"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_missing_zone_file_leaves_dns_undecided_and_says_which_command_makes_it() {
    let dir = copy_of("healthy", "missing-records");
    std::fs::remove_file(dir.join("private-dns-records/privatelink.azurecr.io.json")).expect("rm");
    let (code, report) = analyse_dir(&dir, &[]);
    assert_eq!(code, 3);
    let login = endpoint(&report, "system", LOGIN);
    assert_eq!(login["verdict"]["decided"], false);
    assert_eq!(login["step"], "dns");
    assert_eq!(
        login["resource"],
        "private-dns-records/privatelink.azurecr.io.json"
    );
    assert!(
        login["show"]
            .as_str()
            .expect("show")
            .contains("record-set a list -g \"$ZONE_RG\" -z \"privatelink.azurecr.io\""),
        "{login:#}"
    );
    // What needs no zone still gets its verdict.
    assert_passes(&report, "system", MIRROR);
    let missing = report["exports"]
        .as_array()
        .expect("exports")
        .iter()
        .find(|e| e["file"] == "private-dns-records/privatelink.azurecr.io.json")
        .expect("listed");
    assert_eq!(missing["state"], "missing");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn without_the_gateway_exports_a_drop_toward_on_premises_stays_open() {
    let dir = copy_of("healthy", "missing-gateways");
    std::fs::remove_file(dir.join("vnet-gateways.json")).expect("rm");
    let (code, report) = analyse_dir(&dir, &[]);
    assert_eq!(code, 3, "undecided, not a route failure: {report:#}");
    let mirror = endpoint(&report, "system", MIRROR);
    assert_eq!(mirror["verdict"]["decided"], false);
    assert_eq!(mirror["step"], "route");
    assert_eq!(mirror["resource"], "vnet-gateways.json");
    assert!(
        mirror["verdict"]["decides"]
            .as_str()
            .expect("decides")
            .contains("az network vnet-gateway show"),
        "{mirror:#}"
    );
    assert_passes(&report, "system", LOGIN);
    assert!(unconcluded(&report).contains("vnet-gateways.json is missing"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_directory_that_is_not_there_is_a_usage_error() {
    let out = run(&["azure", "analyse", "/nonexistent/pullpath-exports"]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pullpath azure commands"));
}

#[test]
fn the_schema_rejects_a_failed_endpoint_without_its_field_evidence() {
    let (_, mut report) = analyse("peering-disconnected");
    report["pools"][0]["endpoints"][0]
        .as_object_mut()
        .expect("endpoint")
        .remove("resource");
    let result = std::panic::catch_unwind(|| assert_valid(&report));
    assert!(result.is_err(), "a failed endpoint must name its resource");
}

/// Every node of a document, depth first, as JSON pointers.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                pointers(item, format!("{at}/{i}"), out);
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                let key = key.replace('~', "~0").replace('/', "~1");
                pointers(item, format!("{at}/{key}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn mutated_exports_always_get_a_report() {
    // Each file of two export sets, with nodes swapped for values of the wrong type and the
    // text cut short: the analysis must answer every time (run in-process, as the binary does).
    let replacements = [
        Value::Null,
        Value::from(7),
        Value::from("x"),
        Value::Array(Vec::new()),
        serde_json::json!({}),
    ];
    let mut runs = 0;
    for scenario in ["healthy", "arm-shaped"] {
        let dir = copy_of(scenario, &format!("mutated-{scenario}"));
        let mut files = Vec::new();
        for entry in walk(&dir) {
            files.push(entry);
        }
        for file in files {
            let original = std::fs::read_to_string(&file).expect("fixture");
            let document: Value = serde_json::from_str(&original).expect("fixture JSON");
            let mut all = Vec::new();
            pointers(&document, String::new(), &mut all);
            for (n, pointer) in all.iter().enumerate().step_by(5) {
                let mut mutated = document.clone();
                if let Some(node) = mutated.pointer_mut(pointer) {
                    *node = replacements[n % replacements.len()].clone();
                }
                std::fs::write(&file, mutated.to_string()).expect("write");
                let report = pullpath::azure::run(&dir, None).expect("a directory is a report");
                let _ = serde_json::to_string(&report).expect("serializes");
                runs += 1;
            }
            for cut in [
                1,
                original.len() / 3,
                original.len() / 2,
                original.len() - 2,
            ] {
                std::fs::write(&file, &original.as_bytes()[..cut.min(original.len())])
                    .expect("write");
                let report = pullpath::azure::run(&dir, None).expect("a report");
                assert_valid(&serde_json::to_value(&report).expect("value"));
                runs += 1;
            }
            std::fs::write(&file, &original).expect("restore");
        }
        let _ = std::fs::remove_dir_all(dir);
    }
    assert!(runs > 200, "{runs} runs");
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}
