#!/usr/bin/env bash
# Build the probe image without Docker: an OCI image layout (image-spec v1.1) from the static
# binary scripts/release.sh made. One layer, nothing but the binary, /etc/passwd and /etc/group
# for its non-root user, and /tmp: the equivalent of `FROM scratch`. index.json names an image
# index with a manifest per platform (linux/amd64, and linux/arm64 when that binary is given).
#
#   bash scripts/image.sh [--binary FILE] [--arm64-binary FILE] [--out DIR] [--tag TAG]
#   skopeo copy --all oci:dist/image:v0.1.0 docker://registry.example.com/tools/pullpath:0.1.0
#
# The image runs as 65532:65532: the probe needs no privilege (routes come from rtnetlink, which
# any user may ask; DNS and connects are ordinary sockets), only read access to the node files
# deploy/probe-pod.yaml mounts.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(cargo metadata --no-deps --format-version 1 --offline |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="pullpath"))')
binary=dist/pullpath-v$version-x86_64-unknown-linux-gnu/pullpath
arm64_binary=
out=dist/image
tag=v$version
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=${2:?}; shift 2 ;;
    --arm64-binary) arm64_binary=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --tag) tag=${2:?}; shift 2 ;;
    *) echo "usage: image.sh [--binary FILE] [--arm64-binary FILE] [--out DIR] [--tag TAG]" >&2; exit 64 ;;
  esac
done

for bin in "$binary" $arm64_binary; do
  if [ ! -x "$bin" ]; then
    echo "image: no binary at $bin: run scripts/release.sh first" >&2
    exit 64
  fi
  # A scratch image has no dynamic loader and no libc: the binary must be static.
  if readelf -lW "$bin" | grep -q 'Requesting program interpreter'; then
    echo "image: $bin is dynamically linked; build it with scripts/release.sh" >&2
    exit 64
  fi
done

revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out"
mkdir -p "$out/blobs/sha256"

# One layer per platform: the root filesystem, owned by root, times fixed (reproducible).
layer() { # ARCH BINARY -> writes $work/ARCH.tar
  local root=$work/root-$1
  mkdir -p "$root/etc" "$root/tmp" "$root/usr/local/bin"
  chmod 1777 "$root/tmp"
  install -m 0755 "$2" "$root/usr/local/bin/pullpath"
  printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' > "$root/etc/group"
  chmod 0644 "$root/etc/passwd" "$root/etc/group"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --format=gnu \
    -C "$root" -cf "$work/$1.tar" etc tmp usr
}
platforms=(amd64)
layer amd64 "$binary"
if [ -n "$arm64_binary" ]; then
  platforms+=(arm64)
  layer arm64 "$arm64_binary"
fi

python3 - "$out" "$work" "$tag" "$version" "$revision" "$epoch" "${platforms[@]}" <<'PY'
import datetime, gzip, hashlib, json, os, sys

out, work, tag, version, revision, epoch, *platforms = sys.argv[1:]
created = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

def blob(data: bytes, media_type: str, **extra) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    with open(os.path.join(out, "blobs", "sha256", digest[7:]), "wb") as f:
        f.write(data)
    return {"mediaType": media_type, "digest": digest, "size": len(data), **extra}

def canonical(doc) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()

labels = {
    "org.opencontainers.image.title": "pullpath",
    "org.opencontainers.image.description": "Why can't this Kubernetes node pull this image? The pullpath probe, run on the node's network.",
    "org.opencontainers.image.version": version,
    "org.opencontainers.image.revision": revision,
    "org.opencontainers.image.licenses": "Apache-2.0",
    "org.opencontainers.image.created": created,
}
manifests = []
for arch in platforms:
    tar = open(os.path.join(work, f"{arch}.tar"), "rb").read()
    compressed = gzip.compress(tar, compresslevel=9, mtime=0)
    layer = blob(compressed, "application/vnd.oci.image.layer.v1.tar+gzip")
    config = blob(canonical({
        "created": created,
        "architecture": arch,
        "os": "linux",
        "config": {
            "User": "65532:65532",
            "Entrypoint": ["/usr/local/bin/pullpath"],
            "Cmd": ["--help"],
            "Env": ["PATH=/usr/local/bin"],
            "WorkingDir": "/tmp",
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(tar).hexdigest()]},
        "history": [{"created": created, "created_by": "scripts/image.sh"}],
    }), "application/vnd.oci.image.config.v1+json")
    manifest = blob(canonical({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config,
        "layers": [layer],
        "annotations": labels,
    }), "application/vnd.oci.image.manifest.v1+json", platform={"architecture": arch, "os": "linux"})
    manifests.append(manifest)
    print(f"image: linux/{arch} layer {layer['size'] / 1e6:.1f} MB compressed, {len(tar) / 1e6:.1f} MB unpacked")

index = blob(canonical({
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.index.v1+json",
    "manifests": manifests,
    "annotations": labels,
}), "application/vnd.oci.image.index.v1+json", annotations={"org.opencontainers.image.ref.name": tag})
with open(os.path.join(out, "index.json"), "wb") as f:
    f.write(canonical({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [index]}))
with open(os.path.join(out, "oci-layout"), "w") as f:
    f.write('{"imageLayoutVersion":"1.0.0"}')
total = sum(os.path.getsize(os.path.join(out, "blobs", "sha256", b)) for b in os.listdir(os.path.join(out, "blobs", "sha256")))
print(f"image: {out}:{tag} ({', '.join('linux/' + a for a in platforms)}), {total / 1e6:.1f} MB in all")
PY
