//! Which runtime wrote a text, from the words only it uses, so the rest of the classifier can
//! read the text in that runtime's terms.

use crate::vocab::Runtime;

/// Each runtime's own words, from its source: containerd (core/remotes/docker, core/content,
/// the CRI plugin), CRI-O and podman (containers/image docker/, copy/, storage/), Docker (moby
/// daemon/internal/distribution, buildkit, the v1-era client).
const CONTAINERD_WORDS: &[&str] = &[
    "failed to pull and unpack image",
    "failed to resolve reference",
    "failed to resolve image",
    "unexpected status from HEAD request",
    "httpReadSeeker",
    "httpReaderSeeker",
    "failed to copy:",
    "failed to extract layer",
    "no match for current platform",
    "no match for platform",
    "failed commit on ref",
    "failed to read expected number of bytes",
    "pulling from host",
    "ctr: ",
    // client/pull.go and core/unpack: the pull's unpack step. (The resolver's own words,
    // `failed to do request`, `failed to authorize`, are containerd's library, which tools
    // such as helm and buildkit print too: they name no runtime.)
    "failed to unpack image on snapshotter",
    "failed to prepare extraction snapshot",
    "nerdctl",
    // The ECS agent on Fargate, which pulls with containerd.
    "pull image manifest has been retried",
    // The resolver's log line for a host it moves past (core/remotes/docker/resolver.go), the
    // journal's process name, and containerd's own plugin ids and state directory.
    "trying next host",
    "containerd[",
    "io.containerd.",
    "/var/lib/containerd/",
];
const CRIO_WORDS: &[&str] = &[
    "pinging container registry",
    "pinging docker registry",
    "Error reading manifest",
    "Error choosing image instance",
    "choosing an image from manifest list",
    "Error determining manifest MIME type",
    "parsing image configuration",
    "Error writing blob",
    "writing blob",
    "reading blob",
    "reading manifest",
    "initializing source docker://",
    "Error initializing source",
    "unable to retrieve auth token",
    "Source image rejected",
    "did not resolve to an alias",
    "crio",
    // containers/image copy/ (copy.go, single.go, blob.go), storage/storage_dest.go and
    // docker/docker_client.go; CRI-O's mirror list; podman's progress line (containers/common
    // libimage) and its own name in a log prefix.
    "copying system image from manifest list",
    "trying to reuse blob",
    "adding layer with blob",
    "Requesting bearer token",
    "reading config blob",
    "partial pull of blob",
    "initializing image from source",
    "determining manifest MIME type",
    "Mirrors also failed",
    "Trying to pull ",
    "podman",
    // docker/docker_client.go's token request, misspelt as it is printed; c/storage's home;
    // the short-name policy (pkg/shortnames), the configuration's home and image/unparsed.go's
    // digest check of a manifest it read.
    "Requesting bear token",
    "/var/lib/containers/storage",
    "short name mode is enforcing",
    "/etc/containers/",
    "Manifest does not match provided manifest digest",
];
const DOCKER_WORDS: &[&str] = &[
    "Error response from daemon",
    "error pulling image configuration",
    "Error while pulling image",
    "dockerd",
    "docker-current",
    "docker: ",
    "Docker API",
    "DockerApiException",
    "CannotPullECRContainerError",
    "in the manifest list entries",
    "failed to register layer",
    "trying to pull repository",
    "Trying to pull repository",
    "not found in repository",
    "failed to solve: ",
    // The classic builder's `COPY --from` / `FROM` of an image it cannot pull
    // (daemon/builder/dockerfile/dispatchers.go), and the command itself when pasted.
    "invalid from flag value",
    "docker pull ",
    // docker compose v2's progress line; compose v1 and buildx print `ERROR: ` (see `runtime`).
    "✘ Image ",
    // The daemon's state directory and its blob download's temporary file
    // (distribution/pull_v2.go), a platform check of daemon/images, and the Engine API as its
    // clients print a failed call: docker-py (`500 Server Error … for url:
    // http+docker://localhost/v1.45/images/create?…`), dockerode and docker-java (`(HTTP code
    // 500) server error - {"message": …}`).
    "/var/lib/docker/",
    "GetImageBlob",
    "cannot be used on this platform",
    "http+docker://",
    "/images/create",
    "(HTTP code ",
    "server error - {",
    " Server Error: Internal Server Error (",
    // distribution/pull_v2.go's refusal of a schema 1 manifest (Docker 25 and later); the
    // daemon's words lowercased by a tool; go-dockerclient (`API error (500): …`, the
    // kubelet's dockertools and CI plugins); BuildKit's progress step; the CLI's temporary
    // file and credential helper protocol.
    "[DEPRECATION NOTICE] Docker Image Format v1",
    "error response from daemon",
    "API error (",
    "load metadata for ",
    ".docker_temp_",
    "error getting credentials - err",
];

pub fn runtime(text: &str) -> Runtime {
    let any = |words: &[&str]| words.iter().any(|w| text.contains(w));
    // helm pulls charts with containerd's resolver (ORAS): its words are containerd's library,
    // printed by no node's runtime.
    if any(&["Error: INSTALLATION FAILED", "Error: UPGRADE FAILED"]) {
        return Runtime::Unknown;
    }
    // Docker's tools print their error as `ERROR: …` (compose v1, buildx; buildkit's progress
    // as `#N ERROR: …`), where podman and the containers/image tools print `Error: …`.
    let docker_tool = text.trim_start().starts_with("ERROR: ")
        || text.trim_start().starts_with('#')
            && text
                .split_once(' ')
                .is_some_and(|(_, rest)| rest.starts_with("ERROR: "));
    if docker_tool || any(DOCKER_WORDS) {
        Runtime::Docker
    } else if any(CRIO_WORDS) {
        Runtime::Crio
    } else if any(CONTAINERD_WORDS) {
        Runtime::Containerd
    } else {
        Runtime::Unknown
    }
}
