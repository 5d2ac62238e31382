#!/usr/bin/env bash
# Run every fuzz target (fuzz/fuzz_targets/, one per parser of outside input) for
# SECONDS_PER_TARGET seconds each (default 60), one after the other, and print per target the
# inputs executed and the crashes (panics, timeouts over 10 s, memory over 512 MiB). Exits 1
# when any target crashed; its input is in fuzz/artifacts/TARGET/.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Needs a nightly toolchain and cargo-fuzz (`rustup toolchain install nightly --profile minimal`,
# `cargo install --locked cargo-fuzz`; CI's stable-only machine has neither, and does not run
# this); without them it says so and exits 0.
# Seeds come from fuzz/corpus/TARGET (committed); what a run learns is kept in the ignored
# fuzz/work/TARGET, so a later run starts from there. Nothing here touches the network.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds=${1:-60}
shift || true
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2
  exit 64
fi

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "fuzz.sh: skipped: no nightly toolchain (rustup toolchain install nightly --profile minimal)"
  exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: skipped: cargo-fuzz is not installed (cargo install --locked cargo-fuzz)"
  exit 0
fi

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo +nightly fuzz list)
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# Built once, as released (overflow wraps as in the shipped binary); each run reuses it.
flags=(--release)
if ! cargo +nightly fuzz build "${flags[@]}" >"$logs/build.log" 2>&1; then
  cat "$logs/build.log" >&2
  exit 1
fi

failed=0
printf '%-20s %8s %14s %8s\n' target seconds executions crashes
for target in "${targets[@]}"; do
  mkdir -p "work/$target" "corpus/$target" "artifacts/$target"
  before=$(find "artifacts/$target" -type f | wc -l)
  # The working corpus first: libFuzzer adds what it finds there, never to the seeds.
  status=0
  cargo +nightly fuzz run "${flags[@]}" "$target" "work/$target" "corpus/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=512 -timeout=10 -print_final_stats=1 \
    >"$logs/$target.log" 2>&1 || status=$?
  runs=$(grep -oE '^stat::number_of_executed_units: [0-9]+' "$logs/$target.log" | tail -1 |
    grep -oE '[0-9]+$' || true)
  if [ -z "$runs" ]; then
    runs=$(grep -oE '^#[0-9]+' "$logs/$target.log" | tail -1 | tr -d '#' || true)
  fi
  crashes=$(($(find "artifacts/$target" -type f | wc -l) - before))
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then
    crashes=1 # the run failed without leaving an input (e.g. the build broke)
  fi
  printf '%-20s %8s %14s %8s\n' "$target" "$seconds" "${runs:-?}" "$crashes"
  if [ "$crashes" -ne 0 ]; then
    failed=1
    grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written to' "$logs/$target.log" |
      sed 's/^/    /' | head -8
  fi
done
exit $failed
