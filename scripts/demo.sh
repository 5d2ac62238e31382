#!/usr/bin/env bash
# Install pullpath and run its main job, `pullpath probe IMAGE`, from a node's network namespace
# in the lab: once on a healthy path, once on a path whose blob host the node cannot reach.
# Debian 12, as root. Everything stays inside the lab's namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
prefix=${PULLPATH_PREFIX:-/usr/local}
cargo install --quiet --path . --root "$prefix"
python3 lab/lab.py up >/dev/null

state=/var/lib/pullpath-lab
certs=$state/containerd/node/certs.d
# The node's runtime is the lab node's containerd (its environment holds any proxy settings).
probe() {
  echo alice-secret | ip netns exec pp-node "$prefix/bin/pullpath" probe registry.example.test/team-a/small:v1 \
    --username alice --password-stdin --containerd-certs "$certs" \
    --runtime-pid "$(cat "$state/pids/containerd-node.pid")" --systemd-dir "$state/systemd" \
    --runtime-endpoint "$state/containerd/node/containerd.sock" "$@" || true
}
python3 lab/lab.py scenario healthy >/dev/null
probe --full
echo
python3 lab/lab.py scenario blob-host-unreachable >/dev/null
probe
python3 lab/lab.py scenario healthy >/dev/null
