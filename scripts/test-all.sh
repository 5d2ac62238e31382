#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine, as root: install what the lab needs,
# bring the lab up, run every test, take the lab down again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(docker-registry containerd nginx-light dnsmasq-base skopeo nftables iproute2 openssl
          curl protobuf-compiler python3 procps time)
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

python3 lab/lab.py down >/dev/null
trap 'python3 lab/lab.py down >/dev/null' EXIT
python3 lab/lab.py up ${PULLPATH_LAB_LARGE:+--large}

# The benchmarks in their short mode: they must work; their speed is not judged here.
bash bench/pull.sh --quick
PULLPATH_BENCH_QUICK=1 cargo bench --quiet --bench explain

cargo nextest run --no-fail-fast "$@"
