#!/usr/bin/env bash
# Static checks: gofmt (no file may need formatting), go vet on every workspace module, and
# buf lint on the protos. Exits non-zero on the first kind of finding, after printing it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$PATH:/usr/local/go/bin"
buf=${DROVER_BIN:-$root/bin}/buf

# Module directories from go.work ("use" entries), e.g. bbs ctl integration lib proto.
modules=$(go work edit -json | jq -r '.Use[].DiskPath | ltrimstr("./")')

echo "lint: gofmt"
unformatted=$(gofmt -l $modules)
if [ -n "$unformatted" ]; then
  echo "these files need gofmt -w:" >&2
  echo "$unformatted" >&2
  exit 1
fi

echo "lint: go vet ($(echo $modules))"
go vet $(for m in $modules; do echo "./$m/..."; done)

echo "lint: buf lint"
[ -x "$buf" ] || { echo "buf is missing at $buf (run scripts/install-deps.sh)" >&2; exit 1; }
(cd proto && "$buf" lint)
echo "lint: ok"
