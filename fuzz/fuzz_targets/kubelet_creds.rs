//! `cargo +nightly fuzz run kubelet_creds`: any text as a kubelet `CredentialProviderConfig`
//! (`parse_provider_config`), as a plugin's stdout (`parse_provider_response`) and stderr
//! (`redact_stderr`), and as containerd's per-registry auth (`containerd_registry_auth`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullpath::probe::kubelet_creds;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = kubelet_creds::parse_provider_config(&text, "/etc/kubernetes/credential-provider.yaml");
    for api_version in [
        "credentialprovider.kubelet.k8s.io/v1",
        "credentialprovider.kubelet.k8s.io/v1beta1",
    ] {
        let _ = kubelet_creds::parse_provider_response(data, api_version);
    }
    let _ = kubelet_creds::redact_stderr(data);
    let _ = kubelet_creds::containerd_registry_auth(&text, "registry.example:5000");
});
