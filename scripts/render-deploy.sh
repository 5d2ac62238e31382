#!/usr/bin/env bash
# deploy/ rendered for one release, for `kubectl apply -f -`: the probe namespace, the fleet role
# and the admission policies with this release's pins written into them (docs/security.md).
#
#   bash scripts/render-deploy.sh --probe-image-digest sha256:… \
#     [--probe-binary pullpath-linux-amd64 --probe-binary pullpath-linux-arm64] \
#     [--group pullpath-fleet] | kubectl apply -f -
#
# --probe-image-digest: the probe image's digest (`bash scripts/image.sh` prints it).
# --probe-binary: a release's static pullpath for one architecture (repeat for each). Its SHA-256
#   and the first stage it carries are pinned, so that `pullpath fleet` with no registry can run
#   exactly that binary on nodes of that architecture and nothing else. Without it, nothing is
#   delivered: only the probe image by digest runs.
# --group: the group the fleet role is bound to (default pullpath-fleet).
# Reads only deploy/ and the binaries named; prints YAML documents on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

digest="" group=pullpath-fleet binaries=()
while [ $# -gt 0 ]; do
  case "$1" in
    --probe-image-digest) digest=${2:?}; shift 2 ;;
    --probe-binary) binaries+=("${2:?}"); shift 2 ;;
    --group) group=${2:?}; shift 2 ;;
    --node-images)
      echo "render-deploy.sh: --node-images is gone: once the delivered code is pinned (--probe-binary), any image a node holds may start it" >&2
      exit 64 ;;
    *) echo "render-deploy.sh: unknown argument $1 (see the header of this script)" >&2; exit 64 ;;
  esac
done
if ! [[ $digest =~ ^sha256:[0-9a-f]{64}$ ]]; then
  echo "render-deploy.sh: --probe-image-digest sha256:<64 hex> is required (bash scripts/image.sh prints it)" >&2
  exit 64
fi
if ! [[ $group =~ ^[A-Za-z0-9:._@-]+$ ]]; then
  echo "render-deploy.sh: --group $group: not a group name" >&2
  exit 64
fi

# The first stage a pullpath binary carries (build.rs: the marker, its length as 8 little-endian
# bytes, then the ELF), as a CEL bytes literal: every byte \xHH, so no quote of the input can end
# the literal.
stage_literal() {
  local binary=$1 offset length magic
  for offset in $(LC_ALL=C grep -obUa 'PULLPATH-STAGE:' "$binary" | cut -d: -f1); do
    length=$(od -An -t u8 -j $((offset + 15)) -N 8 "$binary" | tr -d ' ')
    magic=$(od -An -t x1 -j $((offset + 23)) -N 4 "$binary" | tr -d ' ')
    if [ "$magic" = 7f454c46 ] && [ "${length:-0}" -gt 0 ] && [ "$length" -lt 1048576 ]; then
      printf "b'"
      tail -c +$((offset + 24)) "$binary" | head -c "$length" | od -An -v -t x1 | tr -d ' \n' | sed 's/../\\x&/g'
      printf "'"
      return 0
    fi
  done
  return 1
}

hashes="" stages=""
for binary in "${binaries[@]}"; do
  if ! [ -f "$binary" ]; then
    echo "render-deploy.sh: --probe-binary $binary: no such file" >&2
    exit 66
  fi
  if ! stage=$(stage_literal "$binary"); then
    echo "render-deploy.sh: --probe-binary $binary carries no first stage: not a static pullpath release binary" >&2
    exit 65
  fi
  hash=$(sha256sum "$binary" | cut -c1-64)
  hashes+="${hashes:+, }'$hash'"
  stages+="${stages:+, }$stage"
done

policy=$(sed "s/sha256:REPLACE-WITH-THE-PROBE-IMAGE-DIGEST/$digest/" deploy/admission-policy.yaml)
# The probeBinaries variable's expression line, and the stages variable's folded line, whole.
policy=$(sed "/- name: probeBinaries/{n;s|expression: .*|expression: \"[$hashes]\"|}" <<<"$policy")
# (awk reads the literal from its environment: `-v` would undo its \x escapes.)
policy=$(STAGES="$stages" awk '
  pending && /^        \[\]$/ { print "        [" ENVIRON["STAGES"] "]"; pending = 0; next }
  /- name: stages$/ { pending = 1 }
  { print }' <<<"$policy")
printf '%s\n---\n' "$(cat deploy/namespace.yaml)"
printf '%s\n---\n' "$(sed "s/^    name: pullpath-fleet$/    name: $group/" deploy/rbac-fleet.yaml)"
printf '%s\n' "$policy"
