package storetest

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
)

// DefaultPort is the port of the cluster of scripts/postgres.sh (DROVER_PG_PORT overrides
// it there and here).
const DefaultPort = 54329

// DefaultServerURL is the cluster of scripts/postgres.sh on DefaultPort, without its
// password (ServerURL adds where to find it).
const DefaultServerURL = "postgres://drover@127.0.0.1:54329/drover?sslmode=disable"

// The environment that points tests at a server.
const (
	// ServerURLEnv names a server URL (with its credentials) that replaces the cluster of
	// scripts/postgres.sh.
	ServerURLEnv = "DROVER_TEST_DATABASE_URL"
	// PortEnv and HomeEnv are scripts/postgres.sh's: its port, and the directory whose
	// postgres/ holds the cluster and its password files (default <repository>/.drover).
	PortEnv = "DROVER_PG_PORT"
	HomeEnv = "DROVER_HOME"
	// RootEnv overrides where the repository is (default: the nearest directory at or
	// above the working directory that holds go.work).
	RootEnv = "DROVER_ROOT"
)

// ServerURL is the server tests create databases on: $DROVER_TEST_DATABASE_URL, or the
// cluster of scripts/postgres.sh as the role drover on 127.0.0.1:$DROVER_PG_PORT, with
// passfile= naming the cluster's libpq password file when it has one (a cluster of an
// older scripts/postgres.sh has none and needs no password). The URL holds no secret.
func ServerURL() string {
	if u := os.Getenv(ServerURLEnv); u != "" {
		return u
	}
	u := &url.URL{Scheme: "postgres", User: url.User("drover"), Host: "127.0.0.1:" + strconv.Itoa(port()), Path: "/drover"}
	q := url.Values{"sslmode": {"disable"}}
	if f := scriptFile("pgpass"); f != "" {
		q.Set("passfile", f)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// PasswordFile is the file holding the drover role's password of the cluster of
// scripts/postgres.sh, or "" when there is none or $DROVER_TEST_DATABASE_URL is set.
func PasswordFile() string {
	if os.Getenv(ServerURLEnv) != "" {
		return ""
	}
	return scriptFile("drover.password")
}

// port is $DROVER_PG_PORT or DefaultPort.
func port() int {
	if p, err := strconv.Atoi(os.Getenv(PortEnv)); err == nil && p > 0 {
		return p
	}
	return DefaultPort
}

// scriptFile is the path of name in the cluster directory of scripts/postgres.sh when
// that file exists and this process may read it, else "".
func scriptFile(name string) string {
	home := os.Getenv(HomeEnv)
	if home == "" || !filepath.IsAbs(home) {
		root, err := repositoryRoot()
		if err != nil {
			return ""
		}
		if home == "" {
			home = ".drover"
		}
		home = filepath.Join(root, home) // a relative DROVER_HOME is the Makefile's, from the root
	}
	path := filepath.Join(home, "postgres", name)
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	_ = f.Close()
	return path
}

// repositoryRoot is $DROVER_ROOT or the nearest directory at or above the working
// directory that holds go.work.
func repositoryRoot() (string, error) {
	if root := os.Getenv(RootEnv); root != "" {
		return filepath.Abs(root)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory")
		}
		dir = parent
	}
}

// redacted is raw without its password, for messages.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "[database url]"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
