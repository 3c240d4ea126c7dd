#!/bin/sh
# A shell app for the busybox stack: writes a page naming this instance, adds a CGI
# script at /cgi-bin/instance, then serves www/ with busybox httpd on $PORT.
set -eu
: "${PORT:?PORT must be set}"
index=${CF_INSTANCE_INDEX:-0}

mkdir -p www/cgi-bin
printf 'shell app instance %s on port %s\n' "$index" "$PORT" >www/index.html

cat >www/cgi-bin/instance <<CGI
#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\n'
printf 'shell app instance %s on port %s, uptime %s\n' '$index' '$PORT' "\$(cut -d' ' -f1 /proc/uptime)"
CGI
chmod 755 www/cgi-bin/instance

echo "shell app instance $index listening on port $PORT"
exec httpd -f -v -p "$PORT" -h www
