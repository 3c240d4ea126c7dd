#!/usr/bin/env bash
# What `make test` and CI run: install what is missing, start the private Postgres, check
# that generated code is current and the code is linted, then run every module's tests
# (unit and integration) and print a summary. Non-zero when anything fails.
#   scripts/test.sh            # everything
#   scripts/test.sh unit       # every module but the integration suite
#   scripts/test.sh integration
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$PATH:/usr/local/go/bin"

what=${1:-all}
unit_pkgs=(./proto/... ./lib/... ./bbs/... ./ctl/... ./executor/... ./rep/... ./auctioneer/... ./converger/... ./route-emitter/... ./fileserver/...)
integration_pkgs=(./integration/...)
case "$what" in
  all) pkgs=("${unit_pkgs[@]}" "${integration_pkgs[@]}") ;;
  unit) pkgs=("${unit_pkgs[@]}") ;;
  integration) pkgs=("${integration_pkgs[@]}") ;;
  *) echo "usage: $0 [all|unit|integration]" >&2; exit 2 ;;
esac

step() { echo; echo "==> $*"; }

step "dependencies"
scripts/install-deps.sh

step "private postgres"
scripts/postgres.sh start

step "private containerd"
scripts/containerd.sh start

status=0
if [ "$what" = all ]; then
  step "generated code (make proto-check)"
  scripts/proto.sh check || status=1
  step "lint (make lint)"
  scripts/lint.sh || status=1
fi

step "go test ${pkgs[*]}"
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
GOTEST_SUMMARY=$summary scripts/gotest.sh "${pkgs[@]}" || status=1

echo
if [ "$status" -eq 0 ]; then
  echo "make test: OK"
else
  echo "make test: FAILED (see above)"
fi
cat "$summary" # the test counts stay the last line
exit "$status"
