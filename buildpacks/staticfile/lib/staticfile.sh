# Shared functions of the staticfile buildpack (POSIX sh, sourced by bin/*).

# find_nginx prints the stack's nginx binary.
find_nginx() {
	if [ -x /usr/sbin/nginx ]; then echo /usr/sbin/nginx; return 0; fi
	command -v nginx
}

# staticfile_root prints the `root:` directory named in BUILD/Staticfile, if any.
staticfile_root() {
	[ -f "$1/Staticfile" ] || return 0
	sed -n 's/^root:[[:space:]]*\([^[:space:]]*\)[[:space:]]*$/\1/p' "$1/Staticfile" | head -n 1
}

# finalize_site BUILD_DIR lays the site out for nginx.
finalize_site() {
	build=$1
	root=$(staticfile_root "$build")
	if [ -n "$root" ]; then
		case $root in
		/* | *..*) echo "staticfile: Staticfile root: $root must be a relative path inside the app" >&2; exit 1 ;;
		esac
		[ -d "$build/$root" ] || { echo "staticfile: Staticfile root: $root is not a directory of the app" >&2; exit 1; }
		echo "       Serving the $root directory"
	elif [ -f "$build/.staticfile-public" ]; then
		root=public
	else
		root=public
		echo "       Moving the site into public/"
		tmp=$(mktemp -d "$build/.public.XXXXXX")
		for f in "$build"/* "$build"/.[!.]* "$build"/..?*; do
			[ -e "$f" ] || [ -L "$f" ] || continue
			case ${f##*/} in
			"${tmp##*/}" | Staticfile | Procfile | .profile.d | .profile) continue ;;
			esac
			mv -- "$f" "$tmp/"
		done
		mv -- "$tmp" "$build/public"
		: >"$build/.staticfile-public"
	fi
	chmod -R a+rX "$build/$root"
	write_nginx_conf "$build/nginx.conf" "$root"
	write_boot "$build/boot.sh"
	echo "       Wrote nginx.conf (serving $root/ on \$PORT)"
}

# write_nginx_conf FILE ROOT writes the nginx config template; boot.sh fills in @PORT@,
# @RUN@ (a writable directory for pid and temp files), @APP@ and @ACCESS_LOG@.
write_nginx_conf() {
	cat >"$1" <<CONF
# nginx.conf template written by drover's staticfile buildpack; boot.sh renders it.
worker_processes 1;
pid @RUN@/nginx.pid;
error_log stderr;
events { worker_connections 512; }
http {
	include /etc/nginx/mime.types;
	default_type application/octet-stream;
	@ACCESS_LOG@
	sendfile on;
	client_body_temp_path @RUN@/client_body;
	proxy_temp_path @RUN@/proxy;
	fastcgi_temp_path @RUN@/fastcgi;
	uwsgi_temp_path @RUN@/uwsgi;
	scgi_temp_path @RUN@/scgi;
	server {
		listen @PORT@;
		root @APP@/$2;
		index index.html index.htm;
		location / { try_files \$uri \$uri/ =404; }
	}
}
CONF
}

# write_boot FILE writes the start script: render nginx.conf for $PORT and exec nginx.
write_boot() {
	cat >"$1" <<'BOOT'
#!/bin/sh
# boot.sh (staticfile buildpack): renders nginx.conf for $PORT and runs nginx in front.
set -eu
app=$(pwd)
run=${TMPDIR:-/tmp}/staticfile-nginx-${PORT:-8080}
mkdir -p "$run"
access="access_log off;"
if [ -w /dev/stdout ]; then access="access_log /dev/stdout;"; fi
sed -e "s|@PORT@|${PORT:-8080}|" -e "s|@RUN@|$run|g" -e "s|@APP@|$app|" \
	-e "s|@ACCESS_LOG@|$access|" "$app/nginx.conf" >"$run/nginx.conf"
nginx=nginx
if [ -x /usr/sbin/nginx ]; then nginx=/usr/sbin/nginx; fi
exec "$nginx" -p "$app" -e stderr -c "$run/nginx.conf" -g 'daemon off;'
BOOT
	chmod 0755 "$1"
}
