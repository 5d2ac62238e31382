#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine, as root: install what the lab needs,
# bring the lab up, run every test, take the lab down again.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

# pullpath builds with only a Rust toolchain: no protoc (the CRI client is generated ahead of
# time), and the committed CRI client is what the pinned proto gives.
bash scripts/check-no-protoc.sh
bash scripts/gen-cri.sh --check

python3 lab/lab.py down >/dev/null
trap 'python3 lab/lab.py down >/dev/null' EXIT
python3 lab/lab.py up

# The benchmarks in their short mode: they must work; their speed is not judged here.
bash bench/pull.sh --quick
PULLPATH_BENCH_QUICK=1 cargo bench --profile dev --quiet --bench explain

status=0
cargo nextest run --no-fail-fast "$@" || status=$?

# Teardown must leave nothing behind.
trap - EXIT
python3 lab/lab.py down >/dev/null
python3 lab/lab.py check-clean
exit $status
