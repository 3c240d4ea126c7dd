#!/usr/bin/env bash
# Static checks: gofmt (no file may need formatting), go vet and staticcheck on every
# workspace module, and buf lint on the protos. Runs them all, prints every finding, and exits non-zero if any
# check failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$PATH:/usr/local/go/bin"
buf=${DROVER_BIN:-$root/bin}/buf
staticcheck=${DROVER_BIN:-$root/bin}/staticcheck
failed=()

# Module directories from go.work ("use" entries), e.g. bbs ctl integration lib proto.
modules=$(go work edit -json | jq -r '.Use[].DiskPath | ltrimstr("./")') || exit 1

echo "lint: gofmt"
unformatted=$(gofmt -l $modules)
if [ -n "$unformatted" ]; then
  echo "these files need gofmt -w:" >&2
  echo "$unformatted" >&2
  failed+=(gofmt)
fi

echo "lint: go vet ($(echo $modules))"
go vet $(for m in $modules; do echo "./$m/..."; done) || failed+=("go vet")

echo "lint: staticcheck"
if [ ! -x "$staticcheck" ]; then
  echo "staticcheck is missing at $staticcheck (run scripts/install-deps.sh)" >&2
  failed+=(staticcheck)
else
  "$staticcheck" $(for m in $modules; do echo "./$m/..."; done) || failed+=(staticcheck)
fi

echo "lint: buf lint"
if [ ! -x "$buf" ]; then
  echo "buf is missing at $buf (run scripts/install-deps.sh)" >&2
  failed+=("buf lint")
elif ! (cd proto && "$buf" lint); then
  failed+=("buf lint")
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "lint: ok"
