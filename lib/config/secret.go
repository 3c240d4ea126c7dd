package config

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
)

// MaxSecretFileBytes bounds a secret file (a password, a passphrase).
const MaxSecretFileBytes = 4096

// ReadSecretFile reads a secret (a password) kept in its own file, so that it is in
// neither a configuration file nor a log: the whole file, without a trailing newline. An
// empty file, or one larger than MaxSecretFileBytes, is an error. Errors name the path,
// never the content.
func ReadSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSecretFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxSecretFileBytes {
		return "", fmt.Errorf("%s: larger than %d bytes", path, MaxSecretFileBytes)
	}
	secret := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if secret == "" {
		return "", errors.New(path + ": empty")
	}
	return secret, nil
}

// UserPassword checks the credentials of a client: field_username with a password in
// field_password_file (preferred) or inline in field_password, from exactly one place;
// no password without a username; nothing at all is valid (no authentication).
func UserPassword(field, username, password, passwordFile string) error {
	switch {
	case password != "" && passwordFile != "":
		return Invalid(field+"_password_file", "give %s_password_file or %s_password, not both", field, field)
	case username == "" && (password != "" || passwordFile != ""):
		return Invalid(field+"_username", "is required with a password")
	case username != "" && password == "" && passwordFile == "":
		return Invalid(field+"_password_file", "%s_username needs a password: %s_password_file (or %s_password)", field, field, field)
	}
	return nil
}

// Password is the password given inline, or else the content of passwordFile
// (ReadSecretFile); "" when neither is set.
func Password(password, passwordFile string) (string, error) {
	if password != "" || passwordFile == "" {
		return password, nil
	}
	return ReadSecretFile(passwordFile)
}

// RedactURL hides the password of a URL-style connection string (in its user info or a
// password= query parameter) for logs; keyword/value strings, which may hold
// password=..., are hidden entirely.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		if raw == "" {
			return ""
		}
		return "[redacted]"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
