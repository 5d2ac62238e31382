#!/usr/bin/env bash
# The quick checks before a commit: formatting, lints, and every test that needs no lab.
# (The lab's tests need root and `python3 lab/lab.py up`; scripts/test-all.sh runs everything.)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo nextest run -E 'not binary_id(/^pullpath::lab/)'
