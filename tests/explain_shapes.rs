//! Message shapes of each runtime beyond the corpus sample, one row each: the layer, hop and
//! host `explain` must name. Written in the runtimes' own wording, as their source builds it
//! (containerd 1.6–2.x `core/remotes/docker`, `core/content`; containers/image `docker/`,
//! `copy/`, `storage/` for CRI-O and podman; moby `distribution/`; the kubelet). An empty host
//! means the text names none.

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
        "docker.io",
        "Failed to pull image \"nginx\": rpc error: code = DeadlineExceeded desc = context deadline exceeded",
    ),
    // --- CRI-O / podman (containers/image docker/, copy/, storage/) ---
    (
        "forbidden",
        "registry",
        "registry.example.com",
        "Error: initializing source docker://registry.example.com/team/app:v1: pinging container registry registry.example.com: StatusCode: 403, \"<html><body>Forbidden</body></html>\"",
    ),
    (
        "blob",
        "blob",
        "cdn01.quay.io",
        "Failed to pull image \"quay.io/team/app:v1\": rpc error: code = Unknown desc = parsing image configuration: Get \"https://cdn01.quay.io/quayregistry-us-east-1/sha256/ab/abcdef?X-Amz-Signature=x\": dial tcp 52.0.0.1:443: i/o timeout",
    ),
    (
        "blob",
        "blob",
        "registry.example.com",
        "Failed to pull image \"registry.example.com/team/app:v1\": rpc error: code = Unknown desc = Error reading blob sha256:abc: Error fetching blob: invalid status code from registry 404 (Not Found)",
    ),
    (
        "blob",
        "blob",
        "quay.io",
        "Failed to pull image \"quay.io/team/app:v1\": rpc error: code = Unknown desc = writing blob: storing blob to file \"/var/tmp/storage1/1\": happened during read: Digest did not match, expected sha256:aaa, got sha256:bbb",
    ),
    (
        "platform",
        "registry",
        "quay.io",
        "Error: choosing an image from manifest list docker://quay.io/team/app:v1: no image found in image index for architecture \"arm64\", variant \"v8\", OS \"linux\"",
    ),
    (
        "notfound",
        "registry",
        "registry.example.com",
        "Error: initializing source docker://registry.example.com/team/app:v1: reading manifest v1 in registry.example.com/team/app: errors:\ndenied: requested access to the resource is denied\nunauthorized: authentication required\n",
    ),
    (
        "ratelimit",
        "auth",
        "registry.example.com",
        "Error: initializing source docker://registry.example.com/team/app:v1: Requesting bearer token: too many requests to registry",
    ),
    // --- containerd (core/remotes/docker, core/content) ---
    (
        "blob",
        "blob",
        "registry.example.test",
        "Failed to pull image \"registry.example.test/team-a/small:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-a/small:v1\": failed to read expected number of bytes: unexpected EOF",
    ),
    (
        "blob",
        "blob",
        "registry.example.test",
        "Failed to pull image \"registry.example.test/team-a/big:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-a/big:v1\": failed to copy: short read: expected 52428800 bytes but got 1048576: unexpected EOF",
    ),
    (
        "other",
        "registry",
        "registry.example.test",
        "Failed to pull image \"registry.example.test/team-a/small:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-a/small:v1\": failed commit on ref \"manifest-sha256:abc\": \"manifest-sha256:abc\" failed size validation: 1638 != 529: failed precondition",
    ),
    (
        "other",
        "unknown",
        "registry.example.test",
        "Failed to pull image \"registry.example.test/team-a/small:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-a/small:v1\": failed to extract layer sha256:abc: write /var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/9/fs/usr/lib/x: no space left on device: unknown",
    ),
    (
        "notfound",
        "registry",
        "ghcr.io",
        "failed to copy: httpReadSeeker: failed open: content at https://ghcr.io/v2/team/app/manifests/sha256:abc not found: not found",
    ),
    (
        "blob",
        "blob",
        "registry-1.docker.io",
        "Failed to pull image \"docker.io/team/app:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"docker.io/team/app:v1\": failed to copy: httpReadSeeker: failed open: unexpected status code https://registry-1.docker.io/v2/team/app/blobs/sha256:abc: 429 Too Many Requests - Server message: toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit",
    ),
    (
        "forbidden",
        "registry",
        "123456789012.dkr.ecr.us-west-2.amazonaws.com",
        "failed to resolve ref 123456789012.dkr.ecr.us-west-2.amazonaws.com/app:v1@sha256:abc: unexpected status from HEAD request to https://123456789012.dkr.ecr.us-west-2.amazonaws.com/v2/app/blobs/sha256:abc: 403 Forbidden",
    ),
    (
        "other",
        "registry",
        "127.0.0.1:65001",
        "failed to pull and unpack image \"harbor.example.com/base/nginx:1\": failed to resolve reference \"harbor.example.com/base/nginx:1\": pulling from host 127.0.0.1:65001 failed with status code [manifests 1]: 500 Internal Server Error",
    ),
    // --- containerd 1.7 and 2.x wording of the lab's faults ---
    (
        "auth",
        "registry",
        "registry.example.test",
        "Failed to pull image \"registry.example.test/team-a/small:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-a/small:v1\": failed to resolve reference \"registry.example.test/team-a/small:v1\": unexpected status from HEAD request to https://registry.example.test/v2/team-a/small/manifests/v1: 401 Unauthorized",
    ),
    (
        "auth",
        "registry",
        "registry.example.test",
        "Failed to pull image \"registry.example.test/team-a/small:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-a/small:v1\": failed to resolve reference \"registry.example.test/team-a/small:v1\": pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials",
    ),
    (
        "forbidden",
        "registry",
        "registry.example.test",
        "Failed to pull image \"registry.example.test/team-b/small:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-b/small:v1\": failed to resolve image: pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed",
    ),
    (
        "auth",
        "auth",
        "auth.example.test",
        "Failed to pull image \"registry.example.test/team-a/small:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-a/small:v1\": failed to resolve image: failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://auth.example.test/token?scope=repository%3Ateam-a%2Fsmall%3Apull&service=registry.example.test: 401 Unauthorized",
    ),
    (
        "auth",
        "auth",
        "auth.example.test",
        "Failed to pull image \"registry.example.test/team-a/small:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-a/small:v1\": failed to resolve reference \"registry.example.test/team-a/small:v1\": failed to authorize: failed to fetch oauth token: unexpected status from POST request to https://auth.example.test/token: 401 Unauthorized",
    ),
    (
        "dns",
        "registry",
        "registry.example.test",
        "Failed to pull image \"registry.example.test/team-a/small:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-a/small:v1\": failed to resolve image: failed to do request: Head \"https://registry.example.test/v2/team-a/small/manifests/v1\": dial tcp: lookup registry.example.test on 10.10.5.2:53: no such host",
    ),
    (
        "forbidden",
        "registry",
        "myacr.azurecr.io",
        "Failed to pull image \"myacr.azurecr.io/app:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"myacr.azurecr.io/app:v1\": failed to resolve image: unexpected status from HEAD request to https://myacr.azurecr.io/v2/app/manifests/v1: 403 Forbidden\ndenied: the key vault access of the registry is denied",
    ),
    // --- Docker (moby distribution/, the v1-era client) ---
    (
        "forbidden",
        "registry",
        "docker.io",
        "Error: Status 403 trying to pull repository team/app: \"{\\\"error\\\": \\\"Permission Denied\\\"}\"",
    ),
    (
        "blob",
        "blob",
        "registry.example.com",
        "Failed to pull image \"registry.example.com/team/app:v1\": rpc error: code = Unknown desc = Error response from daemon: error pulling image configuration: unknown blob",
    ),
    // --- the proxy, whatever the inner words ---
    (
        "proxy",
        "proxy",
        "proxy.corp.example:3128",
        "Error response from daemon: Get \"https://registry-1.docker.io/v2/\": proxyconnect tcp: dial tcp proxy.corp.example:3128: connect: connection refused",
    ),
    (
        "proxy",
        "proxy",
        "registry.example.com",
        "Failed to pull image \"registry.example.com/app:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.com/app:v1\": failed to resolve reference \"registry.example.com/app:v1\": failed to do request: Head \"https://registry.example.com/v2/app/manifests/v1\": error connecting to proxy: connection refused",
    ),
    (
        "proxy",
        "proxy",
        "registry.example.com",
        "Failed to pull image \"registry.example.com/app:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.com/app:v1\": failed to resolve reference \"registry.example.com/app:v1\": failed to do request: Head \"https://registry.example.com/v2/app/manifests/v1\": tls: failed to verify certificate: x509: certificate signed by unknown authority (possibly because of \"crypto/rsa: verification error\" while trying to verify candidate authority certificate \"Zscaler Root CA\")",
    ),
    // --- on the node, around the pull ---
    (
        "other",
        "unknown",
        "registry.example.test",
        "Failed to pull image \"registry.example.test/team-a/small:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-a/small:v1\": failed to extract layer sha256:abc: unexpected EOF: unknown",
    ),
    (
        "other",
        "unknown",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com",
        "E0301 12:00:00.000000    1234 plugin.go:198] Failed getting credential from external registry credential provider: error execing credential provider plugin ecr-credential-provider for image 123456789012.dkr.ecr.us-east-1.amazonaws.com/app: exit status 1",
    ),
    (
        "other",
        "unknown",
        "registry.example.com",
        "Error response from daemon: Get \"https://registry.example.com/v2/\": error getting credentials - err: exit status 1, out: `no usernames for registry.example.com`",
    ),
    (
        "other",
        "unknown",
        "",
        "Failed to apply default image tag \"Registry.example.com/App:v1\": couldn't parse image reference \"Registry.example.com/App:v1\": invalid reference format: repository name must be lowercase",
    ),
    (
        "other",
        "unknown",
        "",
        "Failed to pull image \"app:v1\": rpc error: code = Unknown desc = short-name \"app:v1\" did not resolve to an alias and no unqualified-search registries are defined in \"/etc/containers/registries.conf\"",
    ),
    // --- the host, however the text spells it ---
    (
        "refused",
        "registry",
        "[fd00::5]:5000",
        "Error response from daemon: Get \"https://[fd00::5]:5000/v2/\": dial tcp [fd00::5]:5000: connect: connection refused",
    ),
    (
        "route",
        "registry",
        "r.example",
        "Failed to pull image \"r.example/a:1\": rpc error: code = Unknown desc = failed to pull and unpack image \"r.example/a:1\": failed to resolve reference \"r.example/a:1\": failed to do request: Head \"https://r.example:443/v2/a/manifests/1\": dial tcp 10.0.0.1:443: i/o timeout",
    ),
    (
        "tls",
        "registry",
        "r.example:8443",
        "Error while pulling image: Get 'https://r.example:8443/v2/': x509: certificate signed by unknown authority",
    ),
    (
        "refused",
        "registry",
        "index.docker.io",
        "Error while pulling image: Get https: /index.docker.io/v1/repositories/library/x/images: dial tcp 10.0.0.1:443: connect: connection refused",
    ),
    (
        "blob",
        "blob",
        "production.cloudflare.docker.com",
        "error pulling image configuration: download failed after attempts=6: dialing production.cloudflare.docker.com:443 with direct connection: connecting to 104.16.1.1:443: dial tcp 104.16.1.1:443: i/o timeout",
    ),
    (
        "ratelimit",
        "registry",
        "public.ecr.aws",
        "Error: invalid from flag value public.ecr.aws/team/tool:1: toomanyrequests: Rate exceeded",
    ),
    (
        "notfound",
        "registry",
        "r.example",
        "Error response from daemon: repository r.example/team/app not found: does not exist or no pull access",
    ),
    (
        "tls",
        "registry",
        "r.example",
        "$ podman pull r.example/team/app:v1\nTrying to pull r.example/team/app:v1...\nError: initializing source docker://r.example/team/app:v1: pinging container registry r.example: Get \"https://r.example/v2/\": tls: failed to verify certificate: x509: certificate signed by unknown authority",
    ),
    (
        "ratelimit",
        "registry",
        "docker.io",
        "Error response from daemon: toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit",
    ),
    // --- podman and CRI-O in the lab's faults, as containers/image words them ---
    (
        "blob",
        "blob",
        "relay.example.test",
        "Error: copying system image from manifest list: reading config blob sha256:abc: Get \"https://relay.example.test/b/sha256:abc?sig=x\": dial tcp 10.10.6.2:443: connect: network is unreachable",
    ),
    (
        "blob",
        "blob",
        "labstore.blob.example.test",
        "Error: reading blob sha256:abc: Get \"https://labstore.blob.example.test/v2/blobs/abc?sig=x\": dial tcp: lookup labstore.blob.example.test on 10.10.5.2:53: no such host",
    ),
    (
        "auth",
        "auth",
        "registry.example.test",
        "Error: initializing source docker://registry.example.test/team-a/small:v1: reading manifest v1 in registry.example.test/team-a/small: unable to retrieve auth token: invalid username/password: unauthorized: authentication required",
    ),
    (
        "route",
        "auth",
        "auth.example.test",
        "Error: initializing source docker://registry.example.test/team-a/small:v1: reading manifest v1 in registry.example.test/team-a/small: Get \"https://auth.example.test/token?scope=repository%3Ateam-a%2Fsmall%3Apull&service=registry.example.test\": dial tcp 10.10.3.2:443: connect: network is unreachable",
    ),
    (
        "ratelimit",
        "registry",
        "registry.example.test",
        "Error: initializing source docker://registry.example.test/team-a/small:v1: reading manifest v1 in registry.example.test/team-a/small: too many requests to registry",
    ),
    (
        "blob",
        "blob",
        "winlayers.blob.core.windows.net",
        "Error: copying system image from manifest list: reading blob sha256:abc: failed fetching external blob from all urls: error fetching external blob from \"https://winlayers.blob.core.windows.net/layers/sha256-abc?sv=2019-02-02&sig=x\": received unexpected HTTP status: 403 Forbidden",
    ),
    (
        "route",
        "registry",
        "registry.corp.example:5000",
        "Failed to pull image \"registry.corp.example:5000/app:v1\": rpc error: code = Unknown desc = dial tcp registry.corp.example:5000: i/o timeout",
    ),
    (
        "other",
        "registry",
        "127.0.0.1:65001",
        "failed to resolve reference \"harbor.example.com/base/nginx:1\": pulling from host 127.0.0.1:65001 failed with status code [manifests 1]: 502 Bad Gateway",
    ),
    (
        "tls",
        "registry",
        "quay.io",
        "Error: unable to pull quay.io/team/app:v1: 1 error occurred:\n\t* x509: certificate signed by unknown authority",
    ),
    (
        "notfound",
        "registry",
        "quay.io",
        "Failed to pull image \"quay.io/x/y:1\": rpc error: code = Unknown desc = (Mirrors also failed: [mirror.example/x/y:1: pinging container registry mirror.example: Get \"https://mirror.example/v2/\": dial tcp 10.0.0.9:443: i/o timeout]\n[mirror2.example/x/y:1: reading manifest 1 in mirror2.example/x/y: manifest unknown]): quay.io/x/y:1: reading manifest 1 in quay.io/x/y: manifest unknown",
    ),
    (
        "tls",
        "registry",
        "r.example",
        "Error: unable to pull app:v1: x509: certificate is valid for ingress.local, other.example, not r.example",
    ),
    // --- on the node, after the download (containers/image storage/, containers/storage) ---
    (
        "other",
        "unknown",
        "",
        "Error: writing blob: adding layer with blob \"sha256:abc\": processing tar file(write /usr/lib/x: no space left on device): exit status 1",
    ),
    (
        "blob",
        "blob",
        "docker.io",
        "Error: copying system image from manifest list: trying to reuse blob sha256:abc at destination: reading blob sha256:abc: fetching blob: toomanyrequests: You have reached your pull rate limit",
    ),
    // --- where the text names its host in other ways ---
    // An object store's XML error document: registries answer JSON, storage answers XML.
    (
        "blob",
        "blob",
        "r.example",
        "Failed to pull image \"r.example/app:v1\": rpc error: code = Unknown desc = Error response from daemon: error parsing HTTP 403 response body: invalid character '<' looking for beginning of value: \"<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code><Message>Access denied.</Message></Error>\"",
    ),
    // The peer of a connection already open, where nothing else names a host.
    (
        "blob",
        "blob",
        "203.0.113.7",
        "error pulling image configuration: read tcp 10.0.2.15:35986->203.0.113.7:443: read: connection reset by peer",
    ),
    // A name a rendered page turned into a markdown link, pasted back.
    (
        "dns",
        "registry",
        "r.example",
        "failed to do request: Head \"https://r.example/v2/a/manifests/1\": dial tcp: lookup [r.example](http://r.example/) on 10.0.0.2:53: server misbehaving",
    ),
    // The name the resolver failed on is the host that failed.
    (
        "dns",
        "registry",
        "b.example",
        "failed to resolve reference \"a.example/app:1\": failed to do request: Head \"https://a.example/v2/app/manifests/1\": dial tcp: lookup b.example on 10.0.0.2:53: no such host",
    ),
    // The Docker Engine API as docker-py prints a failed pull: the socket is no registry, the
    // query names the image.
    (
        "notfound",
        "registry",
        "r.example:8193",
        "404 Client Error for http+docker://localhost/v1.45/images/create?tag=2.1&fromImage=r.example%3A8193%2Fteam%2Fapp: Not Found (\"manifest for r.example:8193/team/app:2.1 not found: manifest unknown: manifest unknown\")",
    ),
    // containers/image's token step, misspelt as it prints it, for a docker:// short name
    // (its docker transport reads the name Docker's way).
    (
        "forbidden",
        "auth",
        "docker.io",
        "Error: initializing source docker://python:3.11: Requesting bear token: invalid status code from registry 403 (Forbidden)",
    ),
    // Go's transport before it said `proxyconnect`: the proxy is the failing host.
    (
        "proxy",
        "proxy",
        "10.0.0.9:3128",
        "Error while pulling image: Get https://index.docker.io/v1/repositories/a/b/images: http: error connecting to proxy http://10.0.0.9:3128: dial tcp 10.0.0.9:3128: getsockopt: connection refused",
    ),
    // Docker's refusal of a schema 1 manifest names the image in its advice.
    (
        "other",
        "registry",
        "r.example",
        "Error response from daemon: [DEPRECATION NOTICE] Docker Image Format v1 and Docker Image manifest version 2, schema 1 support is disabled by default and will be removed in an upcoming release. Suggest the author of r.example/team/app:v1 to upgrade the image to the OCI Format or Docker Image manifest v2, schema 2.",
    ),
    // kubeadm names the image outside crictl's log record; klog outside its `err`; Argo in a
    // `message` key of its own.
    (
        "platform",
        "registry",
        "r.example",
        "[ERROR ImagePull]: failed to pull image r.example/kube-apiserver:v1.30.0: output: time=\"2024-01-01T00:00:00Z\" level=fatal msg=\"pulling image: rpc error: code = Unknown desc = Error choosing image instance: no image found in manifest list for architecture arm64, variant v8, OS linux\"",
    ),
    (
        "other",
        "unknown",
        "r.example",
        "E0425 03:13:37.830947   15673 remote_image.go:171] \"PullImage from image service failed\" err=\"rpc error: code = Unknown desc = invalid policy in \\\"/etc/containers/policy.json\\\": Unknown key \\\"keyPaths\\\"\" image=\"r.example/pause:3.9\"",
    ),
    (
        "notfound",
        "registry",
        "r.example",
        "time=\"2024-07-23T15:49:17Z\" level=info msg=\"node changed\" new.message=\"ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image \\\"r.example/a:1\\\": failed to resolve reference \\\"r.example/a:1\\\": r.example/a:1: not found\" new.phase=Pending",
    ),
    // Pasted through a translator: curled quotes, a capitalised `TCP` and `I/O`.
    (
        "route",
        "registry",
        "r.example",
        "Failed to create pod sandbox: rpc error: code=Unknown desc=failed pulling image \"r.example/pause:3.6\": Error response from daemon: Head“ https://r.example/v2/pause/manifests/3.6 ”: dial TCP 10.0.0.5:443: I/O timeout",
    ),
    // The registry's bare DENIED message.
    (
        "forbidden",
        "registry",
        "",
        "Error response from daemon: denied",
    ),
    // --- the kubelet ---
    (
        "dns",
        "registry",
        "registry.example.test",
        "Back-off pulling image \"registry.example.test/team-a/small:v1\": ErrImagePull: rpc error: code = Unknown desc = failed to pull and unpack image \"registry.example.test/team-a/small:v1\": failed to resolve reference \"registry.example.test/team-a/small:v1\": failed to do request: Head \"https://registry.example.test/v2/team-a/small/manifests/v1\": dial tcp: lookup registry.example.test on 10.10.5.2:53: no such host",
    ),
    (
        "ratelimit",
        "unknown",
        "docker.io",
        "Failed to pull image \"nginx:1.25\": pull QPS exceeded",
    ),
    (
        "platform",
        "unknown",
        "",
        "exec /usr/local/bin/app: exec format error",
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
        if got != (*layer, *hop, *host) {
            wrong.push(format!(
                "want {layer}/{hop}/{host} got {}/{}/{}: {message}",
                got.0, got.1, got.2
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn verdict(message: &str) -> pullpath::failure_text::Diagnosis {
    explain(message).verdict().expect("a verdict").clone()
}

#[test]
fn the_first_error_of_a_registry_list_decides() {
    // containers/image keeps the first (from WWW-Authenticate); older versions printed all.
    let d = verdict(
        "Error: initializing source docker://registry.example.com/team/app:v1: reading manifest v1 in registry.example.com/team/app: errors:\nunauthorized: authentication required\ndenied: requested access to the resource is denied\n",
    );
    assert_eq!((d.layer.as_str(), d.ambiguity.is_none()), ("auth", true));
    assert_eq!(d.cause, "unauthorized: authentication required");
}

#[test]
fn the_blob_hop_keeps_its_mechanism() {
    let cases = [
        (
            "failed to pull and unpack image \"docker.io/team/app:v1\": failed to copy: httpReadSeeker: failed open: unexpected status code https://registry-1.docker.io/v2/team/app/blobs/sha256:abc: 429 Too Many Requests - Server message: toomanyrequests: slow down",
            "ratelimit",
        ),
        (
            "writing blob: storing blob to file \"/var/tmp/storage1/1\": happened during read: Digest did not match, expected sha256:aaa, got sha256:bbb",
            "other",
        ),
        (
            "failed to pull and unpack image \"r.example/a:b\": failed to read expected number of bytes: unexpected EOF",
            "refused",
        ),
        (
            "Error response from daemon: error pulling image configuration: unknown blob",
            "notfound",
        ),
    ];
    for (message, mechanism) in cases {
        let d = verdict(message);
        assert_eq!(d.layer.as_str(), "blob", "{message}");
        assert_eq!(
            d.mechanism.map(|m| m.as_str()),
            Some(mechanism),
            "{message}"
        );
    }
}

#[test]
fn a_bare_back_off_keeps_its_closing_quote_and_one_with_a_cause_is_decided() {
    let bare = verdict(r#"Back-off pulling image "registry.example.test/team-a/small:v1""#);
    assert!(!bare.causal && bare.ambiguity.is_some());
    assert!(bare.cause.ends_with(r#"small:v1""#), "{}", bare.cause);
    let with_cause = verdict(
        r#"Back-off pulling image "registry.example.test/team-a/small:v404": ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "registry.example.test/team-a/small:v404": failed to resolve reference "registry.example.test/team-a/small:v404": registry.example.test/team-a/small:v404: not found"#,
    );
    assert!(with_cause.causal && with_cause.ambiguity.is_none());
    assert_eq!(with_cause.layer.as_str(), "notfound");
}

#[test]
fn pull_access_denied_is_read_by_what_follows_it() {
    let prefix = r#"failed to pull and unpack image "registry.example.test/team-a/small:v1": failed to resolve reference "registry.example.test/team-a/small:v1": pull access denied, repository does not exist or may require authorization: "#;
    let no_credentials = verdict(&format!(
        "{prefix}authorization failed: no basic auth credentials"
    ));
    assert_eq!(no_credentials.layer.as_str(), "auth");
    assert!(no_credentials.ambiguity.is_none(), "the text decides");
    assert_eq!(
        no_credentials.credential,
        Some(pullpath::failure_text::Credential::NotSent)
    );
    let scope = verdict(&format!(
        "{prefix}server message: insufficient_scope: authorization failed"
    ));
    let candidates: Vec<&str> = scope
        .ambiguity
        .as_ref()
        .expect("insufficient_scope alone does not say whether a credential was sent")
        .candidates
        .iter()
        .map(|(l, _)| l.as_str())
        .collect();
    assert_eq!(candidates, ["forbidden", "notfound", "auth"]);
    assert_eq!(scope.layer.as_str(), candidates[0]);
}

#[test]
fn anonymous_and_oauth_token_failures_say_whether_a_credential_was_sent() {
    use pullpath::failure_text::Credential;
    let base = r#"Failed to pull image "registry.example.test/team-a/small:v1": rpc error: code = Unknown desc = failed to pull and unpack image "registry.example.test/team-a/small:v1": failed to resolve reference "registry.example.test/team-a/small:v1": failed to authorize: "#;
    let anonymous =
        format!("{base}failed to fetch anonymous token: unexpected status: 401 Unauthorized");
    let oauth = format!(
        "{base}failed to fetch oauth token: unexpected status from POST request to https://auth.example.test/token: 401 Unauthorized"
    );
    for (message, credential, words) in [
        (&anonymous, Credential::NotSent, "sent no credential"),
        (&oauth, Credential::Sent, "sent a credential"),
    ] {
        let explanation = explain(message);
        let d = explanation.verdict().expect("a verdict");
        assert_eq!((d.layer.as_str(), d.hop.as_str()), ("auth", "auth"));
        assert_eq!(d.credential, Some(credential));
        let report = pullpath::report::explain_report(&explanation).expect("a report");
        assert!(
            report.where_to_look[0].contains(words),
            "{:?}",
            report.where_to_look
        );
        let check = report.next_checks.last().expect("a next check");
        // Credentials are chosen for the registry, never for the token realm's host.
        assert_eq!(
            check,
            &credential.next_check(
                "registry.example.test",
                "POD",
                "registry.example.test/team-a/small:v1"
            )
        );
        assert!(report.where_to_look[0].contains("registry.example.test"));
    }
    // An unreachable token host says nothing about the credential.
    let unreachable = verdict(&format!(
        "{base}failed to fetch oauth token: Post \"https://auth.example.test/token\": dial tcp 10.10.3.2:443: connect: network is unreachable"
    ));
    assert_eq!(
        (unreachable.layer.as_str(), unreachable.credential),
        ("route", None)
    );
}

#[test]
fn texts_that_do_not_decide_say_so_with_the_likely_layer_first() {
    // Go's transport reports a proxy's non-200 answer to CONNECT as the bare reason phrase.
    let gateway = verdict(
        r#"Failed to pull image "registry.k8s.io/pause:3.9": rpc error: code = Unknown desc = Error response from daemon: Get "https://registry.k8s.io/v2/": Bad Gateway"#,
    );
    assert_eq!(gateway.layer.as_str(), "proxy");
    assert!(gateway.ambiguity.is_some());
    // A bare EOF names no request: most likely a layer body cut short.
    let eof = verdict("unexpected EOF");
    assert_eq!(eof.layer.as_str(), "blob");
    let candidates: Vec<&str> = eof
        .ambiguity
        .as_ref()
        .expect("undecided")
        .candidates
        .iter()
        .map(|(l, _)| l.as_str())
        .collect();
    assert_eq!(candidates, ["blob", "refused"]);
}

#[test]
fn each_runtime_is_named_by_its_own_words() {
    let cases = [
        (
            "crio",
            "Error: copying system image from manifest list: writing blob: storing blob to file \"/var/tmp/storage1/1\": happened during read: unexpected EOF",
        ),
        (
            "crio",
            "Trying to pull r.example/app:v1...\nError: initializing source docker://r.example/app:v1: reading manifest v1 in r.example/app: manifest unknown",
        ),
        (
            "docker",
            "Trying to pull repository r.example/app ... \nunauthorized: authentication required",
        ),
        (
            "docker",
            "Error: invalid from flag value r.example/app:v1: toomanyrequests: Rate exceeded",
        ),
        (
            "containerd",
            "failed to pull and unpack image \"r.example/app:v1\": failed to prepare extraction snapshot \"extract-1\": failed to create snapshot: missing parent bucket: not found",
        ),
        // containerd's resolver is a library others print too (helm, diffoci): no runtime.
        (
            "unknown",
            "Error: failed to do request: Head \"https://r.example/v2/app/manifests/v1\": tls: failed to verify certificate: x509: certificate signed by unknown authority",
        ),
        // containerd's resolver log line, and its journal name.
        (
            "containerd",
            "time=\"2025-01-25T19:29:34Z\" level=info msg=\"trying next host\" error=\"failed to do request: Head \\\"https://r.example/v2/a/manifests/1\\\": dial tcp 10.0.0.5:443: i/o timeout\" host=r.example",
        ),
        (
            "containerd",
            "Dec 19 22:11:53 node containerd[108]: level=info msg=\"fetch failed\" error=\"failed to do request: Head \\\"https://r.example/v2/a/manifests/1\\\": EOF\"",
        ),
        // Docker's state directory, and the Engine API as its clients print a failed call.
        (
            "docker",
            "write /var/lib/docker/tmp/GetImageBlob872957069: no space left on device",
        ),
        (
            "docker",
            "(HTTP code 500) server error - {\"message\":\"Get https://r.example/v2/: net/http: TLS handshake timeout\"}",
        ),
        // containers/image's short-name policy; helm printing containerd's library; the Docker
        // daemon's API log line; dockerode; docker-py (as Ansible prints it).
        (
            "crio",
            "Failed to pull image \"alpine\": short name mode is enforcing, but image name alpine:latest returns ambiguous list",
        ),
        (
            "unknown",
            "Error: INSTALLATION FAILED: failed to copy: httpReadSeeker: failed open: unexpected status code https://r.example/v2/charts/a/manifests/sha256:abc: 429 Too Many Requests",
        ),
        (
            "docker",
            "ERRO[2023-07-05T11:23:44Z] Handler for POST /v1.41/images/create returned error: unauthorized: unauthorized to access repository: team/app, action: pull",
        ),
        (
            "docker",
            "(HTTP code 500) server error - Get https://r.example/v2/: proxyconnect tcp: dial tcp 127.0.0.1:3128: getsockopt: connection refused",
        ),
        (
            "docker",
            "Error pulling image team/app:v1 - 500 Server Error: Internal Server Error (\"toomanyrequests: too many requests\")",
        ),
        // BuildKit's progress step; go-dockerclient; the ECS agent on Fargate (containerd).
        (
            "docker",
            "ERROR [internal] load metadata for r.example/sdk:5.0:\nfailed to do request: Head https://r.example/v2/sdk/manifests/5.0: dial tcp: lookup r.example on 10.0.0.2:53: no such host",
        ),
        (
            "docker",
            "Could not pull base image: API error (500): toomanyrequests: too many requests",
        ),
        (
            "containerd",
            "CannotPullContainerError: pull image manifest has been retried 1 time(s): failed to resolve ref r.example/app:v1: not found",
        ),
        // The kubelet's own limit names no runtime.
        (
            "unknown",
            "Failed to pull image \"r.example/app:v1\": pull QPS exceeded",
        ),
    ];
    for (runtime, message) in cases {
        assert_eq!(verdict(message).runtime.as_str(), runtime, "{message}");
    }
}

#[test]
fn a_pasted_event_line_leaves_its_columns_out_of_the_cause() {
    // kubectl ≥ 1.30 describe: the Message column starts with the field path and a colon.
    let d = verdict(
        "  Warning  Failed  3s (x2 over 20s)  kubelet  spec.initContainers{migrate}: Failed to pull image \"r.example/a:1\": rpc error: code = NotFound desc = failed to pull and unpack image \"r.example/a:1\": failed to resolve reference \"r.example/a:1\": r.example/a:1: not found",
    );
    assert_eq!(d.layer.as_str(), "notfound");
    assert_eq!(d.cause, "r.example/a:1: not found");
    let d = verdict(
        "Warning  Failed  3s  kubelet  spec.containers{app}: Failed to pull image \"nginx:1.25\": pull QPS exceeded",
    );
    assert_eq!(
        (d.layer.as_str(), d.cause.as_str()),
        ("ratelimit", "pull QPS exceeded")
    );
}
