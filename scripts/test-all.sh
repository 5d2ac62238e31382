#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine, as root: install what the lab needs,
# bring the lab up, run every test, take the lab down again.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

# One build from a clean clone: incremental state would only take disk (2 GB) and time.
export CARGO_INCREMENTAL=0

# pullpath builds with only a Rust toolchain: no protoc (the CRI client is generated ahead of
# time), and the committed CRI client is what the pinned proto gives.
bash scripts/check-no-protoc.sh
bash scripts/gen-cri.sh --check

python3 lab/lab.py down >/dev/null
trap 'python3 lab/lab.py down >/dev/null' EXIT
python3 lab/lab.py up

# Every fuzz target runs briefly at the end (issue 30). Built now, in the background and niced,
# while the lab tests mostly wait on their namespaces: stable, no sanitizer, unoptimised.
export FUZZ_NIGHTLY=0 FUZZ_PROFILE=dev FUZZ_TIMEOUT=30
mkdir -p target
FUZZ_INSTALL=1 nice -n 19 bash scripts/fuzz.sh --build >target/fuzz-build.log 2>&1 &
fuzz_build=$!
trap 'kill $fuzz_build 2>/dev/null; python3 lab/lab.py down >/dev/null' EXIT

# The benchmarks in their short mode: they must work; their speed is not judged here.
bash bench/pull.sh --quick
PULLPATH_BENCH_QUICK=1 cargo bench --profile dev --quiet --bench explain
PULLPATH_BENCH_QUICK=1 cargo bench --profile dev --quiet --bench fleet

status=0
cargo nextest run --no-fail-fast "$@" || status=$?

# The runtime's ground truth on the versions clusters run: the same scenarios through containerd
# 1.7 (Debian trixie) and 2.1 (Debian sid), fetched without touching the machine's apt state.
python3 lab/lab.py fetch-runtimes
# The probe follows each line's hosts.toml rules: its version-dependent scenarios run on each too,
# and so does its reading of a name without a repository (each line's own normalisation) and of a
# localhost registry without hosts.toml (each line's own default).
for version in 1.7 2.1; do
  PULLPATH_LAB_CONTAINERD=$version cargo nextest run --no-fail-fast --test lab --test lab_probe \
    -E 'binary(lab) or (binary(lab_probe) and test(/^probe_(hosts_(server_only|http_with_ca)|registry_without_repository_goes_to_docker_hub_as_containerd_does|localhost_.*)$/))' || status=$?
  # The node images (AL2023's config_path list, k3s's own flags) and the pause-image start with
  # no registry, on each line's containerd.
  PULLPATH_LAB_CONTAINERD=$version cargo nextest run --no-fail-fast --test lab_cri_kubelet \
    -E 'test(/^(image_nodes_al2023_and_k3s_get_the_verdict_of_their_own_containerd|with_no_registry_the_probe_starts_from_the_pause_image_and_gives_the_runtimes_verdict)$/)' || status=$?
done

# Every parser of outside input, a few seconds each from its seeds: a crash fails the run.
if wait $fuzz_build; then
  bash scripts/fuzz.sh 5 || status=$?
else
  cat target/fuzz-build.log >&2
  status=1
fi

# Teardown must leave nothing behind.
trap - EXIT
python3 lab/lab.py down >/dev/null
python3 lab/lab.py check-clean
exit $status
