#!/usr/bin/env python3
"""Build the lab's test images as OCI blobs and push them to the lab registry.

    images.py build STATE_DIR [--large]
    images.py push  STATE_DIR REGISTRY_HOST CA_FILE [--large]   (run inside the node namespace)

Images (repository:tag):
  team-a/small:v1     three gzip layers, this machine's platform (alice may pull)
  team-b/small:v1     the same content in a repository alice may not read
  team-a/multi:v1     an index with linux/amd64 and linux/arm64
  team-a/foreign:v1   an index with linux/s390x only: no manifest for this node's platform
  team-a/attested:v1  an index as buildx writes it: this node's platform and an attestation
                      manifest for unknown/unknown
  team-a/docker2:v1   a Docker schema 2 manifest (Docker media types throughout)
  team-a/large:v1     >= 256 MiB over four uncompressed layers (with --large)
  team-a/wide:v1      one 512 MiB layer, twice the large image's biggest layer (with --large)
  pause:3.6           the pod sandbox image containerd's sandbox_image names: lab/pause.c built
                      static, anonymous pull (lab/tokend.py), as registry.k8s.io's pause is public

Blobs are built once into STATE_DIR/blobs and described in STATE_DIR/images.json, which tests
read to know every digest they must see verified.
"""

import gzip
import hashlib
import http.client
import io
import json
import os
import platform
import random
import ssl
import subprocess
import tempfile
import sys
import tarfile
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokend  # noqa: E402

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
IN_TOTO = "application/vnd.in-toto+json"
MIB = 1024 * 1024
# Every image build() makes; a cached images.json lacking one is rebuilt.
NAMES = ["team-a/small:v1", "team-b/small:v1", "public/small:v1", "team-a/multi:v1",
         "team-a/foreign:v1", "team-a/attested:v1", "team-a/docker2:v1", "pause:3.6"]


def host_arch() -> str:
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


class Store:
    def __init__(self, state: str):
        self.dir = os.path.join(state, "blobs")
        os.makedirs(self.dir, exist_ok=True)

    def path(self, digest: str) -> str:
        return os.path.join(self.dir, digest.replace(":", "-"))

    def put(self, data: bytes) -> dict:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        path = self.path(digest)
        if not os.path.exists(path):
            with open(path + ".tmp", "wb") as f:
                f.write(data)
            os.rename(path + ".tmp", path)
        return {"digest": digest, "size": len(data)}


def layer_tar(name: str, size: int, seed: str) -> bytes:
    """A tar holding one file of `size` bytes; the content is random but named by `seed`."""
    rng = random.Random(f"{name}/{size}/{seed}")
    # randbytes is limited to 2^31 bits a call: build large payloads in slices.
    payload = b"".join(rng.randbytes(min(16 * MIB, size - at)) for at in range(0, size, 16 * MIB))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        info.size = len(payload)
        info.mtime = 0
        tar.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


def image(store: Store, arch: str, layers: list, compress: bool) -> dict:
    """layers: [(file name, size, seed)] -> manifest descriptor (blob already stored)."""
    descriptors, diff_ids = [], []
    for name, size, seed in layers:
        tar = layer_tar(name, size, seed)
        diff_ids.append("sha256:" + hashlib.sha256(tar).hexdigest())
        blob = gzip.compress(tar, mtime=0) if compress else tar
        descriptors.append({"mediaType": LAYER_GZIP if compress else LAYER_TAR, **store.put(blob)})
    config = {
        "architecture": arch,
        "os": "linux",
        "config": {"Cmd": ["/data"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }
    config_desc = {"mediaType": OCI_CONFIG, **store.put(json.dumps(config, sort_keys=True).encode())}
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config_desc, "layers": descriptors}
    return {"mediaType": OCI_MANIFEST, **store.put(json.dumps(manifest, sort_keys=True).encode())}


def docker_image(store: Store, arch: str, name: str, seed: str) -> dict:
    """A Docker schema 2 image: Docker media types for the manifest, config and layer."""
    tar = layer_tar(name, 4096, seed)
    layer = {"mediaType": DOCKER_LAYER, **store.put(gzip.compress(tar, mtime=0))}
    config = {"architecture": arch, "os": "linux", "config": {"Cmd": ["/data"]},
              "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(tar).hexdigest()]}}
    config_desc = {"mediaType": DOCKER_CONFIG, **store.put(json.dumps(config, sort_keys=True).encode())}
    manifest = {"schemaVersion": 2, "mediaType": DOCKER_MANIFEST, "config": config_desc, "layers": [layer]}
    return {"mediaType": DOCKER_MANIFEST, **store.put(json.dumps(manifest, sort_keys=True).encode())}


def pause_image(store: Store, arch: str) -> dict:
    """The sandbox image: lab/pause.c compiled static, alone at /pause, its entrypoint."""
    with tempfile.TemporaryDirectory() as work:
        binary = os.path.join(work, "pause")
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pause.c")
        built = subprocess.run(["gcc", "-static", "-Os", "-s", "-o", binary, source], capture_output=True, text=True)
        if built.returncode != 0:
            raise SystemExit(f"building the pause image failed (gcc -static {source}):\n{built.stderr}")
        with open(binary, "rb") as f:
            payload = f.read()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("pause")
        info.size, info.mode, info.mtime = len(payload), 0o755, 0
        tar.addfile(info, io.BytesIO(payload))
    tar_bytes = buf.getvalue()
    layer = {"mediaType": LAYER_GZIP, **store.put(gzip.compress(tar_bytes, mtime=0))}
    config = {"architecture": arch, "os": "linux",
              "config": {"Entrypoint": ["/pause"], "User": "65535:65535", "WorkingDir": "/"},
              "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(tar_bytes).hexdigest()]}}
    config_desc = {"mediaType": OCI_CONFIG, **store.put(json.dumps(config, sort_keys=True).encode())}
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config_desc, "layers": [layer]}
    return {"mediaType": OCI_MANIFEST, **store.put(json.dumps(manifest, sort_keys=True).encode())}


def attestation(store: Store, subject: dict) -> dict:
    """An attestation manifest as buildx attaches it: platform unknown/unknown in the index."""
    statement = {"_type": "https://in-toto.io/Statement/v0.1", "predicateType": "https://slsa.dev/provenance/v0.2",
                 "subject": [{"name": "_", "digest": {"sha256": subject["digest"].split(":", 1)[1]}}]}
    layer = {"mediaType": IN_TOTO, **store.put(json.dumps(statement, sort_keys=True).encode()),
             "annotations": {"in-toto.io/predicate-type": "https://slsa.dev/provenance/v0.2"}}
    config_desc = {"mediaType": OCI_CONFIG, **store.put(b'{"architecture":"unknown","os":"unknown","rootfs":{"type":"layers","diff_ids":[]}}')}
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config_desc, "layers": [layer]}
    return {"mediaType": OCI_MANIFEST, **store.put(json.dumps(manifest, sort_keys=True).encode()),
            "annotations": {"vnd.docker.reference.digest": subject["digest"],
                            "vnd.docker.reference.type": "attestation-manifest"},
            "platform": {"os": "unknown", "architecture": "unknown"}}


def index(store: Store, manifests: list) -> dict:
    body = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests}
    return {"mediaType": OCI_INDEX, **store.put(json.dumps(body, sort_keys=True).encode())}


def build(state: str, large: bool) -> dict:
    """Build every image once; later calls reuse STATE/images.json while its blobs are there."""
    store = Store(state)
    described = os.path.join(state, "images.json")
    if os.path.exists(described):
        with open(described) as f:
            images = json.load(f)["images"]
        try:
            complete = all(os.path.exists(store.path(b["digest"])) for d in images.values() for b in children(store, d))
        except FileNotFoundError:
            complete = False
        if complete and all(n in images for n in NAMES) and ("team-a/large:v1" in images or not large):
            return images
    arch = host_arch()
    small_layers = [("etc/app.conf", 2048, "small-1"), ("bin/app", 96 * 1024, "small-2"), ("data/blob", 300 * 1024, "small-3")]
    small = image(store, arch, small_layers, compress=True)
    amd64 = image(store, "amd64", [("multi", 4096, "multi-amd64")], compress=True)
    arm64 = image(store, "arm64", [("multi", 4096, "multi-arm64")], compress=True)
    s390x = image(store, "s390x", [("foreign", 4096, "foreign-s390x")], compress=True)
    multi = index(store, [
        {**amd64, "platform": {"os": "linux", "architecture": "amd64"}},
        {**arm64, "platform": {"os": "linux", "architecture": "arm64"}},
    ])
    foreign = index(store, [{**s390x, "platform": {"os": "linux", "architecture": "s390x"}}])
    built = image(store, arch, [("attested", 4096, "attested")], compress=True)
    attested = index(store, [{**built, "platform": {"os": "linux", "architecture": arch}}, attestation(store, built)])
    images = {
        "team-a/small:v1": small,
        "team-b/small:v1": small,
        "public/small:v1": small,
        "team-a/multi:v1": multi,
        "team-a/foreign:v1": foreign,
        "team-a/attested:v1": attested,
        "team-a/docker2:v1": docker_image(store, arch, "docker2", "docker2"),
        "pause:3.6": pause_image(store, arch),
    }
    if large:
        images["team-a/large:v1"] = image(store, arch, [(f"large/{i}", 64 * MIB, "large") for i in range(4)], compress=False)
        images["team-a/wide:v1"] = image(store, arch, [("wide/0", 512 * MIB, "wide")], compress=False)
    with open(os.path.join(state, "images.json"), "w") as f:
        json.dump({"platform": f"linux/{arch}", "images": images}, f, indent=2, sort_keys=True)
    return images


def children(store: Store, desc: dict) -> list:
    """Every blob a manifest or index refers to, children first."""
    with open(store.path(desc["digest"]), "rb") as f:
        body = json.load(f)
    out = []
    desc = {k: v for k, v in desc.items() if k in ("mediaType", "digest", "size")}
    if desc["mediaType"] == OCI_INDEX:
        for child in body["manifests"]:
            out += children(store, child) + [child]
    else:
        out += [body["config"]] + body["layers"]
    return out


class Registry:
    def __init__(self, host: str, ca_file: str, state: str):
        self.host = host
        self.context = ssl.create_default_context(cafile=ca_file)
        signer = tokend.Signer(os.path.join(state, "pki", "token-signer.key"), os.path.join(state, "pki", "token-signer.pem"))
        self.signer = signer

    def request(self, method, path, repo, body=None, headers=None):
        token = self.signer.token("admin", self.host, [{"type": "repository", "name": repo, "actions": ["pull", "push"]}])
        conn = http.client.HTTPSConnection(self.host, 443, context=self.context, timeout=60)
        conn.request(method, path, body=body, headers={"Authorization": f"Bearer {token}", **(headers or {})})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp, data

    def push_blob(self, repo: str, store: Store, desc: dict):
        resp, _ = self.request("HEAD", f"/v2/{repo}/blobs/{desc['digest']}", repo)
        if resp.status == 200:
            return
        resp, data = self.request("POST", f"/v2/{repo}/blobs/uploads/", repo)
        if resp.status != 202:
            raise SystemExit(f"upload start for {repo} failed: {resp.status} {data[:300]!r}")
        location = urllib.parse.urlsplit(resp.getheader("Location"))
        sep = "&" if location.query else ""
        path = f"{location.path}?{location.query}{sep}digest={desc['digest']}"
        with open(store.path(desc["digest"]), "rb") as f:
            resp, data = self.request("PUT", path, repo, body=f, headers={
                "Content-Type": "application/octet-stream", "Content-Length": str(desc["size"])})
        if resp.status != 201:
            raise SystemExit(f"upload of {desc['digest']} to {repo} failed: {resp.status} {data[:300]!r}")

    def push_manifest(self, repo: str, store: Store, desc: dict, reference: str):
        with open(store.path(desc["digest"]), "rb") as f:
            body = f.read()
        resp, data = self.request("PUT", f"/v2/{repo}/manifests/{reference}", repo, body=body,
                                  headers={"Content-Type": desc["mediaType"]})
        if resp.status != 201:
            raise SystemExit(f"manifest {repo}:{reference} rejected: {resp.status} {data[:300]!r}")


def push(state: str, host: str, ca_file: str, large: bool):
    store = Store(state)
    images = build(state, large)
    registry = Registry(host, ca_file, state)
    for ref, desc in images.items():
        repo, _, tag = ref.rpartition(":")
        for child in children(store, desc):
            if child["mediaType"] in (OCI_MANIFEST, OCI_INDEX):
                for blob in children(store, child):
                    registry.push_blob(repo, store, blob)
                registry.push_manifest(repo, store, child, child["digest"])
            else:
                registry.push_blob(repo, store, child)
        registry.push_manifest(repo, store, desc, tag)
        print(f"pushed {host}/{ref} {desc['digest']}")


def main(argv):
    large = "--large" in argv
    args = [a for a in argv if a != "--large"]
    if len(args) >= 2 and args[0] == "build":
        build(args[1], large)
    elif len(args) >= 4 and args[0] == "push":
        push(args[1], args[2], args[3], large)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
