#!/usr/bin/env bash
# Prove that building pullpath needs no protoc: a clean build (fresh target directory, so every
# build script runs) with PROTOC unset and a PATH on which no `protoc` exists.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The same PATH, less protoc: every entry of every PATH directory linked into one directory.
mkdir "$work/bin"
IFS=: read -ra dirs <<< "$PATH"
for dir in "${dirs[@]}"; do
  [ -d "$dir" ] || continue
  for tool in "$dir"/*; do
    name=${tool##*/}
    [ "$name" = protoc ] && continue
    [ -e "$work/bin/$name" ] || ln -s "$tool" "$work/bin/$name"
  done
done
if PATH="$work/bin" command -v protoc >/dev/null; then
  echo "check-no-protoc: protoc is still on the trimmed PATH" >&2
  exit 1
fi

env -u PROTOC -u PROTOC_INCLUDE PATH="$work/bin" CARGO_TARGET_DIR="$work/target" \
  cargo build --locked --quiet --bin pullpath
"$work/target/debug/pullpath" --version
echo "check-no-protoc: pullpath builds without protoc"
