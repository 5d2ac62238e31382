#!/usr/bin/env bash
# Run every fuzz target (fuzz/fuzz_targets/, one per parser of outside input) for
# SECONDS_PER_TARGET seconds each (default 60), one after the other, and print per target the
# inputs executed and the crashes (panics, timeouts, memory over 512 MiB). Exits 1 when any
# target crashed; its input is in fuzz/artifacts/TARGET/.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   scripts/fuzz.sh --build            # build the targets only (CI builds them in the background)
#
# Needs cargo-fuzz (`cargo install --locked cargo-fuzz`; with FUZZ_INSTALL=1 this script installs
# it, else it says so and exits 0). With a nightly toolchain the targets are built with
# AddressSanitizer; on stable (CI) without a sanitizer (`-s none`): panics, timeouts and memory
# are caught alike, and pullpath has no unsafe code of its own for ASan to watch.
# FUZZ_NIGHTLY=0 builds as on stable where nightly is installed too.
# FUZZ_PROFILE=dev builds unoptimised (faster to build, slower to run: CI's brief runs);
# FUZZ_TIMEOUT is the seconds one input may take (default 10).
# Seeds come from fuzz/corpus/TARGET (committed); what a run learns is kept in the ignored
# fuzz/work/TARGET, and each target's libFuzzer log in fuzz/work/logs/TARGET.log, so a long run
# can be watched. Two runs over disjoint targets may go at once: cargo's lock makes the second
# build wait for the first. Nothing here touches the network beyond cargo's crate downloads.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

build_only=0
if [ "${1:-}" = --build ]; then
  build_only=1
  shift
fi
seconds=${1:-60}
shift || true
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [--build] [SECONDS_PER_TARGET] [TARGET...]" >&2
  exit 64
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
  if [ "${FUZZ_INSTALL:-0}" = 1 ]; then
    cargo install --locked --quiet cargo-fuzz
  else
    echo "fuzz.sh: skipped: cargo-fuzz is not installed (cargo install --locked cargo-fuzz, or FUZZ_INSTALL=1)"
    exit 0
  fi
fi

toolchain=()
flags=()
if [ "${FUZZ_NIGHTLY:-1}" != 0 ] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=(+nightly)
else
  flags+=(--sanitizer none)
fi
case ${FUZZ_PROFILE:-release} in
  release) flags+=(--release) ;; # overflow wraps as in the shipped binary
  dev) flags+=(--dev) ;;
  *)
    echo "fuzz.sh: FUZZ_PROFILE is release or dev" >&2
    exit 64
    ;;
esac

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo "${toolchain[@]}" fuzz list)
fi

logs=work/logs
mkdir -p "$logs"
# Built once; each run reuses it.
if ! cargo "${toolchain[@]}" fuzz build "${flags[@]}" >"$logs/build-$$.log" 2>&1; then
  cat "$logs/build-$$.log" >&2
  exit 1
fi
if [ $build_only = 1 ]; then
  echo "fuzz.sh: ${#targets[@]} targets built (${toolchain[*]:-stable} ${flags[*]})"
  exit 0
fi

failed=0
printf '%-20s %8s %14s %8s\n' target seconds executions crashes
for target in "${targets[@]}"; do
  mkdir -p "work/$target" "corpus/$target" "artifacts/$target"
  before=$(find "artifacts/$target" -type f | wc -l)
  # The working corpus first: libFuzzer adds what it finds there, never to the seeds.
  status=0
  cargo "${toolchain[@]}" fuzz run "${flags[@]}" "$target" "work/$target" "corpus/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=512 -timeout="${FUZZ_TIMEOUT:-10}" -print_final_stats=1 \
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
