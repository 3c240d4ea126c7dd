package devstack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// StartPostgres starts (initialising if needed) the private Postgres of home through
// scripts/postgres.sh and returns its connection URL, which holds no password: the role
// drover's is in PostgresPasswordFile(home).
func StartPostgres(ctx context.Context, root, home string) (string, error) {
	out, err := postgresScript(ctx, root, home, "start")
	if err != nil {
		return "", err
	}
	lines := strings.Fields(out)
	if len(lines) == 0 {
		return "", fmt.Errorf("postgres.sh start printed no URL")
	}
	return lines[len(lines)-1], nil
}

// PostgresPasswordFile is where scripts/postgres.sh keeps the password of the role
// drover, the BBS's, of the private Postgres of home.
func PostgresPasswordFile(home string) string {
	return filepath.Join(home, "postgres", "drover.password")
}

// StopPostgres stops the private Postgres of home; it is not an error if none runs.
func StopPostgres(ctx context.Context, root, home string) error {
	_, err := postgresScript(ctx, root, home, "stop")
	return err
}

func postgresScript(ctx context.Context, root, home, verb string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "postgres.sh"), verb)
	cmd.Env = append(os.Environ(), "DROVER_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("postgres.sh %s: %w: %s", verb, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
