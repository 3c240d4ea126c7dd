#!/usr/bin/env bash
# What `make test` and CI run: install what is missing, start the private Postgres, check
# that generated code is current and the code is linted (gofmt, go vet, staticcheck, buf),
# then run every module's tests (the unit packages with the race detector, the
# integration suite without it), run every fuzz target briefly, and print a summary.
# Non-zero when anything fails.
#   scripts/test.sh            # everything
#   scripts/test.sh unit       # every module but the integration suite
#   scripts/test.sh integration
# Tests that need root, Postgres or containerd skip themselves when those are missing
# (lib/testenv); here DROVER_REQUIRE_ALL=1 turns every such skip into a failure, so that
# nothing is skipped silently.
# Environment: FUZZ_TIME, how long each fuzz target runs in `all` mode (default 5s).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$PATH:/usr/local/go/bin"
export DROVER_REQUIRE_ALL=1

what=${1:-all}
unit_pkgs=(./proto/... ./lib/... ./bbs/... ./ctl/... ./executor/... ./rep/... ./auctioneer/... ./converger/... ./route-emitter/... ./fileserver/... ./stager/... ./lifecycle/... ./devstack/...)
integration_pkgs=(./integration/...)
case "$what" in
  all | unit | integration) ;;
  *) echo "usage: $0 [all|unit|integration]" >&2; exit 2 ;;
esac

step() { echo; echo "==> $*"; }

# fuzz_once DIR NAME OUT fuzzes one target for $FUZZ_TIME, its output to OUT.
fuzz_once() {
  go test -run '^$' -fuzz "^${2}\$" -fuzztime "${FUZZ_TIME:-5s}" -fuzzminimizetime 1s "$1" >"$3" 2>&1
}

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
      if fuzz_once "$dir" "$name" "$out"; then
        echo "ok    $dir $name"
      elif grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out" && fuzz_once "$dir" "$name" "$out"; then
        # Go's fuzz coordinator sometimes misses its own deadline on a loaded machine
        # ("context deadline exceeded" with no failing input): that run found nothing, so
        # it runs once more; a real finding always writes its input and fails.
        echo "ok    $dir $name (second run: the first ended with the fuzz coordinator's deadline)"
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

step "the bookworm stack (scripts/stack.sh: built once, then cached)"
scripts/stack.sh build bookworm

status=0
if [ "$what" = all ]; then
  step "generated code (make proto-check)"
  scripts/proto.sh check || status=1
  step "lint (make lint)"
  scripts/lint.sh || status=1
fi

summaries=()
trap 'rm -f "${summaries[@]}"' EXIT
# run_tests FLAGS PACKAGES...: scripts/gotest.sh with GOTEST_FLAGS=FLAGS; its summary
# line goes to a file of summaries.
run_tests() {
  local flags=$1 summary
  shift
  summary=$(mktemp)
  summaries+=("$summary")
  step "go test $flags $*"
  GOTEST_FLAGS="${GOTEST_FLAGS:-} $flags" GOTEST_SUMMARY=$summary scripts/gotest.sh "$@"
}
if [ "$what" != integration ]; then
  run_tests -race "${unit_pkgs[@]}" || status=1
fi
if [ "$what" != unit ]; then
  # Without -race: the suite drives real processes, where the race detector's cost
  # (several times the CPU) buys little; the binaries' own packages run with it above.
  run_tests "" "${integration_pkgs[@]}" || status=1
fi

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
# The test counts stay the last line: the sum of the runs' "tests: N passed, N failed,
# N skipped" lines.
cat "${summaries[@]}" | awk '{ p += $2; f += $4; s += $6 } END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s }'
exit "$status"
