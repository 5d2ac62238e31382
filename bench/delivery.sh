#!/usr/bin/env bash
# What reaching a node costs, both ways (issue 25): the probe image pulled from the lab registry,
# or pullpath delivered through the API onto the node's pause image. Runs the lab test that
# measures them on the lab's node (real containerd, the CRI kubelet stand-in) with the binary a
# release delivers (static, the `dist` profile of the release archives, stripped:
# PULLPATH_LAB_PROFILE=dist; `release` or `dev` measure those) and prints its table: API request bytes per run, objects
# created, and the time from pod creation to the probe's first step.
# Needs the lab up (python3 lab/lab.py up, as root).
set -euo pipefail
cd "$(dirname "$0")/.."
PULLPATH_LAB_PROFILE=${PULLPATH_LAB_PROFILE:-dist} \
  cargo nextest run --test lab_cri_kubelet --no-capture \
  -E 'test(delivered_or_pulled_the_probe_gives_one_verdict_and_its_costs_are_printed)' 2>&1 |
  grep -E '^(\||delivery:|fleet took)'
