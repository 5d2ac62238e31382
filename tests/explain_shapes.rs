//! Message shapes of each runtime beyond the corpus sample, one row each: the layer, hop and
//! host `explain` must name. Written in the runtimes' own wording (containerd, CRI-O, Docker).

use pullpath::failure_text::explain;

const ROWS: &[(&str, &str, &str, &str)] = &[
    // (layer, hop, host, message)
    (
        "notfound",
        "registry",
        "quay.io",
        "Failed to pull image \"quay.io/x/y:1\": rpc error: code = Unknown desc = reading manifest 1 in quay.io/x/y: manifest unknown: manifest unknown",
    ),
    (
        "route",
        "registry",
        "registry.example.com",
        "Failed to pull image \"registry.example.com/app:v1\": rpc error: code = Unknown desc = initializing source docker://registry.example.com/app:v1: pinging container registry registry.example.com: Get \"https://registry.example.com/v2/\": dial tcp 10.0.0.5:443: connect: no route to host",
    ),
    (
        "blob",
        "blob",
        "quay.io",
        "Failed to pull image \"quay.io/a/b:c\": rpc error: code = Unknown desc = writing blob: storing blob to file \"/var/tmp/storage123/1\": happened during read: read tcp 10.0.0.4:443->1.2.3.4:443: read: connection reset by peer",
    ),
    (
        "blob",
        "blob",
        "x.azurecr.io",
        "Failed to pull image \"x.azurecr.io/app:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"x.azurecr.io/app:v1\": failed to copy: read tcp 10.240.0.4:53634->20.60.1.1:443: read: connection reset by peer",
    ),
    (
        "auth",
        "auth",
        "myacr.azurecr.io",
        "Failed to pull image \"myacr.azurecr.io/app:1\": rpc error: code = Unknown desc = failed to pull and unpack image \"myacr.azurecr.io/app:1\": failed to resolve reference \"myacr.azurecr.io/app:1\": failed to authorize: failed to fetch oauth token: unexpected status: 401 Unauthorized",
    ),
    (
        "dns",
        "registry",
        "myacr.azurecr.io",
        "Failed to pull image \"myacr.azurecr.io/app:1\": rpc error: code = Unknown desc = failed to pull and unpack image \"myacr.azurecr.io/app:1\": failed to resolve reference \"myacr.azurecr.io/app:1\": failed to do request: Head \"https://myacr.azurecr.io/v2/app/manifests/1\": dial tcp: lookup myacr.azurecr.io on 168.63.129.16:53: no such host",
    ),
    (
        "proxy",
        "proxy",
        "10.0.0.1:3128",
        "Failed to pull image \"nginx:1.25\": rpc error: code = Unknown desc = failed to pull and unpack image \"docker.io/library/nginx:1.25\": failed to copy: httpReadSeeker: failed open: failed to do request: Get \"https://production.cloudflare.docker.com/registry-v2/docker/registry/v2/blobs/sha256/ab/abc/data?verify=1\": proxyconnect tcp: dial tcp 10.0.0.1:3128: connect: connection refused",
    ),
    (
        "forbidden",
        "auth",
        "ghcr.io",
        "Failed to pull image \"ghcr.io/org/app:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"ghcr.io/org/app:v1\": failed to resolve reference \"ghcr.io/org/app:v1\": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://ghcr.io/token?scope=repository%3Aorg%2Fapp%3Apull&service=ghcr.io: 403 Forbidden",
    ),
    (
        "tls",
        "registry",
        "registry.k8s.io",
        "Failed to pull image \"registry.k8s.io/pause:3.9\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.k8s.io/pause:3.9\": failed to resolve reference \"registry.k8s.io/pause:3.9\": failed to do request: Head \"https://registry.k8s.io/v2/pause/manifests/3.9\": tls: failed to verify certificate: x509: certificate signed by unknown authority",
    ),
    (
        "ratelimit",
        "registry",
        "registry-1.docker.io",
        "Failed to pull image \"busybox\": rpc error: code = Unknown desc = failed to pull and unpack image \"docker.io/library/busybox:latest\": failed to resolve reference \"docker.io/library/busybox:latest\": unexpected status from HEAD request to https://registry-1.docker.io/v2/library/busybox/manifests/latest: 429 Too Many Requests",
    ),
    (
        "platform",
        "registry",
        "docker.io",
        "Failed to pull image \"app:v1\": rpc error: code = NotFound desc = failed to pull and unpack image \"docker.io/library/app:v1\": failed to unpack image on snapshotter overlayfs: no match for platform in manifest: not found",
    ),
    (
        "notfound",
        "registry",
        "docker.io",
        "Error: initializing source docker://x: reading manifest latest in docker.io/library/x: requested access to the resource is denied",
    ),
    (
        "other",
        "unknown",
        "docker.io",
        "failed to pull and unpack image \"docker.io/library/x:1\": failed to unpack image on snapshotter overlayfs: failed to extract layer sha256:abc: failed to get reader from content store: content digest sha256:abc: not found",
    ),
    (
        "blob",
        "blob",
        "docker.io",
        "failed to pull and unpack image \"docker.io/library/x:1\": failed commit on ref \"layer-sha256:abc\": unexpected commit digest sha256:def, expected sha256:abc: failed precondition",
    ),
    (
        "platform",
        "registry",
        "mcr.microsoft.com",
        "Failed to pull image \"mcr.microsoft.com/windows/servercore:ltsc2022\": rpc error: code = Unknown desc = image operating system \"windows\" cannot be used on this platform",
    ),
    (
        "route",
        "registry",
        "registry-1.docker.io",
        "Error response from daemon: Get \"https://registry-1.docker.io/v2/\": dial tcp [2600:1f18::1]:443: connect: cannot assign requested address",
    ),
    (
        "dns",
        "auth",
        "auth.docker.io",
        "Failed to pull image \"docker.io/x/y:1\": rpc error: code = Unknown desc = failed to pull and unpack image \"docker.io/x/y:1\": failed to resolve reference \"docker.io/x/y:1\": failed to authorize: failed to fetch anonymous token: Get \"https://auth.docker.io/token?scope=repository%3Ax%2Fy%3Apull&service=registry.docker.io\": dial tcp: lookup auth.docker.io: no such host",
    ),
    (
        "route",
        "registry",
        "x.example",
        "Failed to pull image \"x.example/a:b\": rpc error: code = DeadlineExceeded desc = failed to pull and unpack image \"x.example/a:b\": failed to resolve reference \"x.example/a:b\": failed to do request: Head \"https://x.example/v2/a/manifests/b\": dial tcp 10.1.1.1:443: i/o timeout",
    ),
    (
        "other",
        "unknown",
        "",
        "Failed to pull image \"nginx\": rpc error: code = DeadlineExceeded desc = context deadline exceeded",
    ),
];

#[test]
fn each_runtime_shape_gets_its_layer_hop_and_host() {
    let mut wrong = Vec::new();
    for (layer, hop, host, message) in ROWS {
        let explanation = explain(message);
        let d = explanation.verdict().expect("a verdict");
        let got = (
            d.layer.as_str(),
            d.hop.as_str(),
            d.host.as_deref().unwrap_or(""),
        );
        let want_host = if host.is_empty() { got.2 } else { host };
        if got != (*layer, *hop, want_host) {
            wrong.push(format!(
                "want {layer}/{hop}/{host} got {}/{}/{}: {message}",
                got.0, got.1, got.2
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
