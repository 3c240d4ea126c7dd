#!/usr/bin/env bash
# Builds and caches drover's stack root filesystems (tar files the cells import).
#   scripts/stack.sh build bookworm   # build (or reuse) the Debian bookworm stack tar
#   scripts/stack.sh path bookworm    # print the path the tar has or would have
# The last line `build` prints is the tar's path. The tar is cached as
#   ${DROVER_STACK_CACHE:-$ROOT/.drover/cache/stacks}/bookworm-HASH.tar
# where HASH covers this script, the package list and the host's extra CA certificates
# (every *.crt in /usr/local/share/ca-certificates/), which are installed into the stack
# so that TLS works where the network intercepts it; DROVER_STACK_CA_BUNDLE=none leaves
# them out. A build holds a flock on the cache directory's lock file, writes a temp file
# and renames it, so concurrent builds produce one tar. Needs root and mmdebstrap
# (installed with apt-get when missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
self="$root/scripts/stack.sh"
cache=${DROVER_STACK_CACHE:-$root/.drover/cache/stacks}
host_ca_dir=/usr/local/share/ca-certificates
mirror=${DROVER_STACK_MIRROR:-http://deb.debian.org/debian}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}

# bookworm_packages is the bookworm stack's package list (beyond minbase).
bookworm_packages=(
	ca-certificates curl nodejs npm golang-go python3 nginx-light procps git tar gzip
)

say() { echo "stack.sh: $*" >&2; }
die() { say "$*"; exit 1; }
usage() { die "usage: scripts/stack.sh build|path bookworm"; }

# host_cas prints the host's extra CA certificate files, sorted, one a line (none when
# DROVER_STACK_CA_BUNDLE=none).
host_cas() {
	[ "${DROVER_STACK_CA_BUNDLE:-}" = none ] && return 0
	[ -d "$host_ca_dir" ] || return 0
	find "$host_ca_dir" -maxdepth 1 -type f -name '*.crt' | LC_ALL=C sort
}

# stack_hash prints the hash naming a stack's tar: this script, the package list and the
# host CAs (names and contents).
stack_hash() {
	{
		sha256sum <"$self"
		printf '%s\n' "${bookworm_packages[@]}"
		while IFS= read -r crt; do
			printf '%s ' "$(basename "$crt")"
			sha256sum <"$crt"
		done < <(host_cas)
	} | sha256sum | cut -c1-16
}

tmp="" cadir=""
tar_path() { echo "$cache/bookworm-$(stack_hash).tar"; }

build_bookworm() {
	local out
	out=$(tar_path)
	if [ -f "$out" ]; then
		echo "$out"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || die "building a stack needs root (mmdebstrap --mode=root)"
	if ! command -v mmdebstrap >/dev/null; then
		say "installing mmdebstrap"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >&2 ||
			{ apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >&2; } ||
			die "cannot install mmdebstrap"
	fi
	mkdir -p "$cache"
	exec 9>"$cache/bookworm.lock"
	flock 9
	if [ -f "$out" ]; then # another build made it while we waited
		echo "$out"
		return 0
	fi
	tmp=$(mktemp "$cache/.bookworm.XXXXXX.tar")
	cadir=$(mktemp -d)
	trap 'rm -rf -- "$tmp" "$cadir"' EXIT
	while IFS= read -r crt; do
		cp -- "$crt" "$cadir/drover-host-$(basename "$crt")"
	done < <(host_cas)
	local include
	include=$(IFS=,; echo "${bookworm_packages[*]}")
	say "building the bookworm stack (mmdebstrap minbase: $include)"
	mmdebstrap --mode=root --variant=minbase --format=tar \
		--include="$include" \
		--customize-hook='chroot "$1" groupadd -g 2000 vcap' \
		--customize-hook='chroot "$1" useradd -u 2000 -g 2000 -m -d /home/vcap -s /bin/bash vcap' \
		--customize-hook='chroot "$1" chown 2000:2000 /home/vcap' \
		--customize-hook="if ls $cadir/*.crt >/dev/null 2>&1; then cp $cadir/*.crt \"\$1\"/usr/local/share/ca-certificates/; fi" \
		--customize-hook='chroot "$1" update-ca-certificates --fresh >/dev/null' \
		--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
		bookworm "$tmp" "$mirror" >&2 || die "mmdebstrap failed"
	chmod 0644 "$tmp"
	mv -f -- "$tmp" "$out"
	say "built $(du -h "$out" | cut -f1) stack"
	echo "$out"
}

[ $# -eq 2 ] || usage
[ "$2" = bookworm ] || die "unknown stack $2 (known: bookworm)"
case $1 in
build) build_bookworm ;;
path) tar_path ;;
*) usage ;;
esac
