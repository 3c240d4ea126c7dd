package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	libconfig "drover.dev/lib/config"
)

// keywordPassword finds a password in a keyword/value connection string.
var keywordPassword = regexp.MustCompile(`(^|\s)password\s*=`)

// hasPassword reports whether a connection string carries a password: in a URL's user
// info or password= parameter, or as a keyword/value password.
func hasPassword(dsn string) bool {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		_, set := u.User.Password()
		return set || u.Query().Has("password")
	}
	return keywordPassword.MatchString(dsn)
}

// validDatabasePassword checks that the password comes from one place only.
func (c *Config) validDatabasePassword() error {
	if c.DatabasePasswordFile != "" && hasPassword(c.DatabaseURL) {
		return libconfig.Invalid("database_password_file", "database_url already holds a password: give it in one place")
	}
	return nil
}

// DatabaseConnString is the connection string the BBS connects with: database_url with
// the password of database_password_file, when that is set. It holds the secret: use it
// to connect, never log it (LogValue shows database_url without a password).
func (c *Config) DatabaseConnString() (string, error) {
	if c.DatabasePasswordFile == "" {
		return c.DatabaseURL, nil
	}
	password, err := libconfig.ReadSecretFile(c.DatabasePasswordFile)
	if err != nil {
		return "", fmt.Errorf("database_password_file: %w", err)
	}
	return withPassword(c.DatabaseURL, password), nil
}

// withPassword adds password to a URL (as user info) or keyword/value connection string.
func withPassword(dsn, password string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		u.User = url.UserPassword(u.User.Username(), password)
		return u.String()
	}
	quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(password)
	return strings.TrimSpace(dsn) + " password='" + quoted + "'"
}
