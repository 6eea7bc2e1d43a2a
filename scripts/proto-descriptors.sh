#!/usr/bin/env bash
# Writes the descriptor set of every .proto under proto/ beside it (NAME.binpb, a
# FileDescriptorSet with its imports), which `gatebench load grpc://… --grpc-proto-set FILE
# --grpc-json JSON` reads to encode request messages from JSON. Run it after changing a .proto;
# the .binpb files are committed, so neither gatebench nor its tests need protoc. Installs
# Debian's protobuf-compiler when protoc is missing.
#
#   scripts/proto-descriptors.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v protoc >/dev/null; then
    echo "== installing protobuf-compiler (protoc)" >&2
    apt-get update -qq && apt-get install -y -qq protobuf-compiler >/dev/null
fi
find proto -name '*.proto' -print0 | sort -z | while IFS= read -r -d '' file; do
    out="${file%.proto}.binpb"
    protoc --proto_path=proto --include_imports -o "$out" "${file#proto/}"
    echo "$out ($(protoc --version))"
done
