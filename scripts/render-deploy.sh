#!/usr/bin/env bash
# deploy/ rendered for one release, for `kubectl apply -f -`: the probe namespace, the fleet role
# and the admission policy with this release's pins written into it (docs/security.md).
#
#   bash scripts/render-deploy.sh --probe-image-digest sha256:… [--node-images IMAGE,IMAGE…] \
#     [--group pullpath-fleet] | kubectl apply -f -
#
# --probe-image-digest: the probe image's digest (`bash scripts/image.sh` prints it).
# --node-images: the sandbox images fleet may start the probe from with no registry (default:
#   the policy's list); `none` admits no node image, so only the probe image by digest runs.
# --group: the group the fleet role is bound to (default pullpath-fleet).
# Reads only deploy/; prints YAML documents on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

digest="" images="" group=pullpath-fleet
while [ $# -gt 0 ]; do
  case "$1" in
    --probe-image-digest) digest=${2:?}; shift 2 ;;
    --node-images) images=${2:?}; shift 2 ;;
    --group) group=${2:?}; shift 2 ;;
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
# The node images as a CEL list literal: each a reference without quotes, spaces or commas.
list=""
if [ -n "$images" ] && [ "$images" != none ]; then
  IFS=, read -r -a parts <<<"$images"
  for image in "${parts[@]}"; do
    if ! [[ $image =~ ^[A-Za-z0-9._/:@-]+$ ]]; then
      echo "render-deploy.sh: --node-images: $image is not an image reference" >&2
      exit 64
    fi
    list+="${list:+, }'$image'"
  done
fi

policy=$(sed "s/sha256:REPLACE-WITH-THE-PROBE-IMAGE-DIGEST/$digest/" deploy/admission-policy.yaml)
if [ -n "$images" ]; then
  # The nodeImages variable's expression line, whole.
  policy=$(sed "/- name: nodeImages/{n;s|expression: .*|expression: \"[$list]\"|}" <<<"$policy")
fi
printf '%s\n---\n' "$(cat deploy/namespace.yaml)"
printf '%s\n---\n' "$(sed "s/^    name: pullpath-fleet$/    name: $group/" deploy/rbac-fleet.yaml)"
printf '%s\n' "$policy"
