#!/usr/bin/env bash
# What `make test` and CI run: install what is missing, start the private Postgres, check
# that generated code is current and the code is linted, then run every module's tests
# (unit and integration), run every fuzz target briefly, and print a summary. Non-zero
# when anything fails.
#   scripts/test.sh            # everything
#   scripts/test.sh unit       # every module but the integration suite
#   scripts/test.sh integration
# Environment: FUZZ_TIME, how long each fuzz target runs in `all` mode (default 5s).
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

# run_fuzz_targets runs every fuzz target (a `func FuzzX` in a _test.go file) of the unit
# modules for $FUZZ_TIME each, so that each decoder of outside input is fuzzed in CI. It
# prints one line per target, and the output of a failing one (Go writes the failing
# input under the package's testdata/fuzz/).
run_fuzz_targets() {
  local rc=0 file dir name out
  local dirs=("${unit_pkgs[@]%/...}")
  out=$(mktemp)
  while IFS= read -r file; do
    dir=./$(dirname "${file#./}")
    for name in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
      if go test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZ_TIME:-5s}" -fuzzminimizetime 1s "$dir" >"$out" 2>&1; then
        echo "ok    $dir $name"
      else
        echo "FAIL  $dir $name"
        cat "$out"
        rc=1
      fi
    done
  done < <(grep -rl --include='*_test.go' '^func Fuzz' "${dirs[@]}" | sort)
  rm -f "$out"
  return "$rc"
}

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

if [ "$what" = all ]; then
  step "fuzz targets, ${FUZZ_TIME:-5s} each"
  run_fuzz_targets || status=1
fi

echo
if [ "$status" -eq 0 ]; then
  echo "make test: OK"
else
  echo "make test: FAILED (see above)"
fi
cat "$summary" # the test counts stay the last line
exit "$status"
