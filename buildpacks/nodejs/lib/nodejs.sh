# Shared functions of the nodejs buildpack (POSIX sh, sourced by bin/*).

# nodejs_setup sets npm up to work with defaults: a writable npm cache, no update checks,
# and the system CA bundle (which holds any extra CAs of the stack) for node's TLS.
nodejs_setup() {
	command -v node >/dev/null 2>&1 || { echo "nodejs: this stack has no node" >&2; exit 1; }
	command -v npm >/dev/null 2>&1 || { echo "nodejs: this stack has no npm" >&2; exit 1; }
	: "${npm_config_cache:=${TMPDIR:-/tmp}/npm-cache-$(id -u)}"
	export npm_config_cache
	export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
	if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
		export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
	fi
}

# nodejs_validate BUILD_DIR fails with node's message when package.json is not JSON.
nodejs_validate() {
	if ! err=$(node -e 'try { JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")) }
catch (e) { console.error(e.message); process.exit(1) }' "$1/package.json" 2>&1); then
		echo "nodejs: package.json is not valid JSON" >&2
		printf '%s\n' "$err" >&2
		exit 1
	fi
}

# nodejs_has_dependencies BUILD_DIR: package.json lists dependencies.
nodejs_has_dependencies() {
	node -e 'const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
process.exit(Object.keys(p.dependencies || {}).length ? 0 : 1)' "$1/package.json"
}

# nodejs_cache_key BUILD_DIR NODE_VERSION prints the node_modules cache key: the lock
# file (or package.json without one) and the node version.
nodejs_cache_key() {
	lock=$1/package-lock.json
	[ -f "$lock" ] || lock=$1/package.json
	{ cat "$lock"; echo "$2"; } | sha256sum | cut -c1-32
}

# nodejs_install BUILD_DIR CACHE_DIR restores node_modules from the cache or runs npm ci
# and saves the result under the new key (dropping older keys).
nodejs_install() {
	build=$1 cache=$2
	mkdir -p "$cache"
	node_version=$(node --version)
	key=$(nodejs_cache_key "$build" "$node_version")
	saved=$cache/node_modules-$key
	echo "       Using node $node_version"
	rm -rf "$build/node_modules"
	if [ -d "$saved" ]; then
		echo "       Restoring node_modules from cache"
		cp -a "$saved" "$build/node_modules"
		return 0
	fi
	echo "       npm $(npm --version)"
	cd "$build"
	if [ -f package-lock.json ]; then
		echo "       Installing node modules (npm ci)"
		npm ci --omit=dev --no-audit --no-fund 2>&1 || { echo "nodejs: npm ci failed" >&2; exit 1; }
	else
		echo "       Installing node modules (npm install; add a package-lock.json for repeatable builds)"
		npm install --omit=dev --no-audit --no-fund 2>&1 || { echo "nodejs: npm install failed" >&2; exit 1; }
	fi
	cd - >/dev/null
	for old in "$cache"/node_modules-*; do
		[ -e "$old" ] && rm -rf "$old"
	done
	if [ -d "$build/node_modules" ]; then
		echo "       Caching node_modules"
		tmp=$(mktemp -d "$cache/.node_modules.XXXXXX")
		cp -a "$build/node_modules/." "$tmp/"
		mv "$tmp" "$saved"
	fi
}

# nodejs_profile prints the running app's profile script.
nodejs_profile() {
	cat <<'PROFILE'
# Written by drover's nodejs buildpack.
export NODE_ENV=${NODE_ENV:-production}
export NPM_CONFIG_UPDATE_NOTIFIER=false
export PATH="$HOME/app/node_modules/.bin:$PATH"
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
	export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi
PROFILE
}
