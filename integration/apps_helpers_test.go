package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// crashyStartScript is a shell app that serves until GET /cgi-bin/crash, then prints
// its last words (naming %[1]s) and exits with status 7.
const crashyStartScript = `#!/bin/sh
set -eu
: "${PORT:?PORT must be set}"
flag="$PWD/crash-now"
mkdir -p www/cgi-bin
echo "crashy ok" >www/index.html
cat >www/cgi-bin/crash <<CGI
#!/bin/sh
touch "$flag"
printf 'Content-Type: text/plain\r\n\r\ncrashing\n'
CGI
chmod 755 www/cgi-bin/crash
httpd -f -p "$PORT" -h www &
echo "crashy serving on port $PORT"
while [ ! -e "$flag" ]; do sleep 1; done
echo "last words of crashy %[1]s"
kill $! 2>/dev/null || true
exit 7
`

// crashyApp writes the crashy app into a new directory; its last words name token.
func crashyApp(t *testing.T, token string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "start.sh"), []byte(fmt.Sprintf(crashyStartScript, token)), 0o755))
	return dir
}

// staticApp writes a static site whose page says body into a new directory.
func staticApp(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.html"), []byte("<html><body>"+body+"</body></html>\n"), 0o644))
	return dir
}

// getPathThroughRouter sends GET path to the router with Host hostname.
func (ps *pushStack) getPathThroughRouter(hostname, path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, ps.Router.URL()+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = hostname
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}

// requests is how many requests the poll sent so far.
func (p *routerPoll) requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.requests
}

// onlyApp returns the one desired LRP of app name, failing when there is not exactly one.
func (ps *pushStack) onlyApp(t *testing.T, name string) *modelsv1.DesiredLRP {
	t.Helper()
	lrps := ps.appLRPs(t, name)
	require.Len(t, lrps, 1, "app %s has one version", name)
	return lrps[0]
}

// requireOK checks that a droverctl run succeeded and returns its stdout.
func requireOK(t *testing.T, res pushResult) string {
	t.Helper()
	require.NoError(t, res.err, res.output())
	return res.stdout
}

// tableRow is the row of a droverctl table whose first column is first, split into
// words; nil when there is none.
func tableRow(table, first string) []string {
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == first {
			return f
		}
	}
	return nil
}
