#!/bin/sh
# serve.sh: the binary-app example's web process: python3's http.server (the bookworm stack
# has python3) serving public/ on $PORT.
set -eu
cd "$(dirname "$0")/public"
exec python3 -m http.server "${PORT:-8080}" --bind 0.0.0.0
