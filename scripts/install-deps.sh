#!/usr/bin/env bash
# Installs what drover needs on a Debian machine, and only what is missing:
#   - Debian packages (postgresql, nats-server, containerd, runc, CNI plugins, docker-registry, ...), via apt-get
#   - Go tools (grpcurl, buf, staticcheck) into $DROVER_BIN (default: <repo>/bin), via go install
# Idempotent, non-interactive (works as root with no stdin). Needs Go >= 1.26 on PATH or in
# /usr/local/go/bin.
#   scripts/install-deps.sh          # everything
#   scripts/install-deps.sh --check  # exit 1 (and say what) when something is missing
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${DROVER_BIN:-$root/bin}
export PATH="$bin:$PATH:/usr/local/go/bin"

apt_packages=(
  postgresql nats-server containerd runc containernetworking-plugins iptables
  busybox-static iproute2 curl jq ca-certificates
  docker-registry # the private OCI registries of the dev stack and the tests (devstack/registry.go)
  gcc libc6-dev # cgo, which go test -race needs
  btrfs-progs # the btrfs (with quotas) under containerd's root: disk_mb quotas (scripts/containerd.sh)
  mmdebstrap # the bookworm stack's root filesystem (scripts/stack.sh)
  nginx-light # the staticfile buildpack's tests run its nginx on the host (lifecycle/buildpacks)
)
# Go tools: name, package@version. The version must match the go.mod tool pins.
go_tools=(
  "grpcurl github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4"
  "buf github.com/bufbuild/buf/cmd/buf@v1.75.0"
  "staticcheck honnef.co/go/tools/cmd/staticcheck@v0.8.2"
)

say() { echo "install-deps: $*" >&2; }

check_only=false
[ "${1:-}" = "--check" ] && check_only=true

if ! command -v go >/dev/null 2>&1; then
  say "Go is not installed: install Go 1.26 or newer (https://go.dev/dl) into /usr/local/go and retry"
  exit 1
fi

missing_apt=()
for p in "${apt_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing_apt+=("$p")
  fi
done

# tool_ok NAME MODULE@VERSION: the binary exists and was built from that module version.
tool_ok() {
  local exe=$bin/$1 want=${2#*@}
  [ -x "$exe" ] && go version -m "$exe" 2>/dev/null | awk '$1 == "mod" { print $3 }' | grep -qx "$want"
}

missing_tools=()
for t in "${go_tools[@]}"; do
  read -r name pkg <<<"$t"
  tool_ok "$name" "$pkg" || missing_tools+=("$t")
done

if $check_only; then
  [ ${#missing_apt[@]} -eq 0 ] && [ ${#missing_tools[@]} -eq 0 ] && exit 0
  [ ${#missing_apt[@]} -gt 0 ] && say "missing Debian packages: ${missing_apt[*]}"
  for t in "${missing_tools[@]}"; do say "missing Go tool: $t"; done
  exit 1
fi

if [ ${#missing_apt[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { say "need root to install: ${missing_apt[*]}"; exit 1; }
    sudo=(sudo -n)
  fi
  say "installing Debian packages: ${missing_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq </dev/null
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${missing_apt[@]}" </dev/null
fi

if [ ${#missing_tools[@]} -gt 0 ]; then
  mkdir -p "$bin"
  for t in "${missing_tools[@]}"; do
    read -r name pkg <<<"$t"
    say "installing $name ($pkg) into $bin"
    (cd "$root" && GOBIN="$bin" GOWORK=off go install "$pkg")
  done
fi
