package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"drover.dev/stager/config"
)

const valid = `{
  "listen_address": "127.0.0.1:17020",
  "callback_listen_address": "127.0.0.1:17021",
  "callback_url": "https://127.0.0.1:17021",
  "debug_address": "127.0.0.1:17022",
  "tls": {"ca_file": "ca.crt", "cert_file": "stager.crt", "key_file": "stager.key"},
  "bbs_address": "127.0.0.1:8889",
  "database_url": "postgres://drover:secret@127.0.0.1:54329/drover?sslmode=disable",
  "fileserver_url": "http://127.0.0.1:8080",
  "fileserver_signing_key_file": "signing.key",
  "staging_egress_rules": [{"protocol": "tcp", "destinations": ["0.0.0.0/0"], "ports": [443]}],
  "staging_timeout": "10m"
}`

func load(t *testing.T, body string) (*config.Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stager.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return config.Load(p)
}

func TestLoadDefaults(t *testing.T) {
	c, err := load(t, valid)
	if err != nil {
		t.Fatal(err)
	}
	if c.LifecyclePath != "lifecycle/lifecycle.tgz" || c.DefaultStack != "bookworm" || len(c.Stacks) != 2 || c.Stacks[1].User != "root" ||
		c.StagingMemoryMB != 1024 || c.StagingDiskMB != 4096 || c.StagingTimeout.String() != "10m0s" || len(c.StagingEgressRules) != 1 ||
		c.StagingEgressRules[0].Ports[0] != 443 {
		t.Fatalf("config %+v", c)
	}
	if s, ok := c.Stack("busybox"); !ok || s.RootFS != "preloaded:busybox" {
		t.Errorf("busybox stack %+v", s)
	}
	if strings.Contains(c.LogValue().String(), "secret") {
		t.Errorf("log value shows the password: %s", c.LogValue())
	}
}

func TestValidateNamesEveryBadField(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"listen address", `"listen_address": "127.0.0.1:17020"`, `"listen_address": "nope"`, "listen_address"},
		{"callback listen address", `"callback_listen_address": "127.0.0.1:17021"`, `"callback_listen_address": ""`, "callback_listen_address"},
		{"callback url scheme", `"callback_url": "https://127.0.0.1:17021"`, `"callback_url": "http://127.0.0.1:17021"`, `callback_url: scheme must be https`},
		{"callback url relative", `"callback_url": "https://127.0.0.1:17021"`, `"callback_url": "/x"`, `callback_url: must be an absolute URL`},
		{"tls", `"tls": {"ca_file": "ca.crt", "cert_file": "stager.crt", "key_file": "stager.key"}`, `"tls": {}`, "tls: ca_file is required"},
		{"bbs", `"bbs_address": "127.0.0.1:8889"`, `"bbs_address": ""`, "bbs_address"},
		{"database", `"database_url": "postgres://drover:secret@127.0.0.1:54329/drover?sslmode=disable"`, `"database_url": " "`, "database_url: is required"},
		{"fileserver url", `"fileserver_url": "http://127.0.0.1:8080"`, `"fileserver_url": "ftp://x"`, "fileserver_url: scheme must be http or https"},
		{"signing key", `"fileserver_signing_key_file": "signing.key"`, `"fileserver_signing_key_file": ""`, "fileserver_signing_key_file: is required"},
		{"egress rule", `"ports": [443]`, `"ports": [443], "port_range": {"start": 1, "end": 2}`, "staging_egress_rules"},
		{"egress rule protocol", `"protocol": "tcp"`, `"protocol": "smtp"`, "staging_egress_rules"},
		{"egress unknown field", `"ports": [443]`, `"ports": [443], "nope": 1`, "staging_egress_rules[0]"},
		{"timeout", `"staging_timeout": "10m"`, `"staging_timeout": "0s"`, "staging_timeout: must be positive"},
		{"memory", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "staging_memory_mb": 0`, "staging_memory_mb: must be between 1 and 65536"},
		{"disk", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "staging_disk_mb": 70000`, "staging_disk_mb: must be between 1 and 65536"},
		{"lifecycle path", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "lifecycle_path": "/abs"`, "lifecycle_path: must be a relative path"},
		{"no stacks", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "stacks": []`, "stacks: must list at least one stack"},
		{"bad stack", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "stacks": [{"name": "Bad", "rootfs": "docker:x", "user": "Root"}], "default_stack": "Bad"`,
			"stacks[0].name"},
		{"bad stack rootfs", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "stacks": [{"name": "a", "rootfs": "docker:x", "user": "vcap"}], "default_stack": "a"`, "stacks[0].rootfs: must be preloaded:NAME"},
		{"bad stack user", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "stacks": [{"name": "a", "rootfs": "preloaded:a", "user": "Root"}], "default_stack": "a"`, "stacks[0].user"},
		{"duplicate stack", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "stacks": [{"name": "a", "rootfs": "preloaded:a", "user": "vcap"}, {"name": "a", "rootfs": "preloaded:a", "user": "vcap"}], "default_stack": "a"`, `stacks[1].name: "a" is listed twice`},
		{"default stack", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "default_stack": "nope"`, `default_stack: "nope" is not one of stacks (bookworm, busybox)`},
		{"log level", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "log_level": "loud"`, "log_level"},
		{"identity names", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "identity_common_names": {"x": "king"}`, "identity_common_names"},
		{"max connections", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "max_database_connections": 0`, "max_database_connections"},
		{"unknown field", `"staging_timeout": "10m"`, `"staging_timeout": "10m", "nope": 1`, "nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Replace(valid, tc.from, tc.to, 1)
			if body == valid {
				t.Fatalf("%q not in the valid config", tc.from)
			}
			_, err := load(t, body)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	_, err := load(t, strings.Replace(strings.Replace(valid, `"bbs_address": "127.0.0.1:8889"`, `"bbs_address": ""`, 1), `"staging_timeout": "10m"`, `"staging_timeout": "-1s"`, 1))
	if err == nil || !strings.Contains(err.Error(), "bbs_address") || !strings.Contains(err.Error(), "staging_timeout") {
		t.Errorf("two bad fields: %v", err)
	}
}

func TestDatabaseConnStringTakesThePasswordFile(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	c.DatabaseURL = "postgres://drover@127.0.0.1:5432/drover"
	c.DatabasePasswordFile = pw
	dsn, err := c.DatabaseConnString()
	if err != nil || dsn != "postgres://drover:s3cret@127.0.0.1:5432/drover" {
		t.Fatalf("dsn %q %v", dsn, err)
	}
}
