#!/usr/bin/env bash
# Runs `go test` over the given packages of the workspace, prints each package's result as it
# finishes, then the output of every failed test, then a one-line summary:
#   tests: N passed, N failed, N skipped
# Exits non-zero when anything failed (a test, a build, a timeout).
#   scripts/gotest.sh ./lib/... ./bbs/...
# Environment: GOTEST_TIMEOUT (default 20m), GOTEST_P (default 2), GOTEST_FLAGS (extra flags),
# GOTEST_SUMMARY (a file that receives the summary line too).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$PATH:/usr/local/go/bin"
command -v jq >/dev/null || { echo "gotest: jq is missing (run scripts/install-deps.sh)" >&2; exit 1; }
[ $# -gt 0 ] || { echo "usage: $0 PACKAGES..." >&2; exit 2; }

log=$(mktemp -t drover-gotest.XXXXXX.json)
trap 'rm -f "$log"' EXIT

start=$(date +%s)
# shellcheck disable=SC2086 # GOTEST_FLAGS is a list of flags.
go test -json -count=1 -p "${GOTEST_P:-2}" -timeout "${GOTEST_TIMEOUT:-20m}" ${GOTEST_FLAGS:-} "$@" 2>&1 |
  tee "$log" |
  jq -R -r --unbuffered '
    (fromjson? // {Action: "raw", Output: (. + "\n")}) as $e
    | if $e.Action == "raw" then $e.Output
      elif $e.Action == "build-output" then $e.Output
      elif $e.Action == "output" and $e.Test == null
           and ($e.Output | test("^(ok|FAIL|---|panic|\\?)|\\[no test files\\]|build failed|timed out"))
        then $e.Output
      else empty end' |
  tr -d '\r' | sed -u '/^$/d'
rc=${PIPESTATUS[0]}

# The full output of every failed test (non-verbose go test prints just these).
failed_output=$(jq -R -j -s '
  [split("\n")[] | fromjson? | select(.Test != null)] as $events
  | ($events | map(select(.Action == "fail")) | map({Package, Test})) as $failed
  | $failed[] as $f
  | "=== output of \($f.Package) \($f.Test)\n",
    ($events[] | select(.Action == "output" and .Package == $f.Package and .Test == $f.Test) | .Output)
' "$log" | tr -d '\r')
if [ -n "$failed_output" ]; then
  echo
  echo "$failed_output"
fi

count() { jq -R -s --arg a "$1" '[split("\n")[] | fromjson? | select(.Test != null and .Action == $a)] | length' "$log"; }
passed=$(count pass)
failed=$(count fail)
skipped=$(count skip)
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  # A build failure, a panic outside a test or a timeout: count it so the summary says so.
  failed=1
fi
echo
echo "go test took $(($(date +%s) - start))s (exit $rc)"
summary="tests: $passed passed, $failed failed, $skipped skipped"
echo "$summary"
[ -z "${GOTEST_SUMMARY:-}" ] || echo "$summary" >"$GOTEST_SUMMARY"
exit "$rc"
