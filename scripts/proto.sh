#!/usr/bin/env bash
# Generates the Go code of the protos with buf (local protoc plugins are `go tool`s of
# proto/go.mod), or checks that the checked-in code is current.
#   scripts/proto.sh generate   # rewrite proto/gen
#   scripts/proto.sh check      # regenerate into a temp dir; fail if proto/gen differs;
#                               # buf breaking against HEAD~1 (or $PROTO_BASE)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$PATH:/usr/local/go/bin"
buf=${DROVER_BIN:-$root/bin}/buf
[ -x "$buf" ] || { echo "buf is missing at $buf (run scripts/install-deps.sh)" >&2; exit 1; }
cd "$root/proto"

case "${1:-}" in
  generate)
    "$buf" lint
    "$buf" generate
    ;;
  check)
    "$buf" lint
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    "$buf" generate -o "$tmp"
    if ! diff -r "$tmp/gen" gen >"$tmp/diff"; then
      cat "$tmp/diff" >&2
      echo "proto/gen is stale: run 'make proto' and commit the result" >&2
      exit 1
    fi
    echo "proto: generated code is current"
    # buf breaking against the previous commit (PROTO_BASE overrides), when history has it.
    base=${PROTO_BASE:-HEAD~1}
    if git -C "$root" rev-parse --verify -q "$base^{commit}" >/dev/null; then
      "$buf" breaking --against "$root/.git#ref=$(git -C "$root" rev-parse "$base"),subdir=proto"
      echo "proto: no breaking change against $base"
    else
      echo "proto: no $base in this clone's history; buf breaking not run"
    fi
    ;;
  *) echo "usage: $0 generate|check" >&2; exit 2 ;;
esac
