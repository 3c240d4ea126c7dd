// Package config is the stager's configuration: one JSON file, validated at start.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	bbsconfig "drover.dev/bbs/config"
	"drover.dev/bbs/models"
	"drover.dev/lib/authz"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/logging"
	"drover.dev/lib/tlsconfig"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/stager/staging"
)

// Defaults.
const (
	DefaultListenAddress         = "127.0.0.1:17020"
	DefaultCallbackListenAddress = "127.0.0.1:17021"
	DefaultCallbackURL           = "https://127.0.0.1:17021"
	DefaultDebugAddress          = "127.0.0.1:17022"
	DefaultBBSAddress            = "127.0.0.1:8889"
	DefaultLifecyclePath         = "lifecycle/lifecycle.tgz"
	DefaultStack                 = "bookworm"
	DefaultStagingTimeout        = 15 * time.Minute
	DefaultStagingMemoryMB       = 1024
	DefaultStagingDiskMB         = 4096
	DefaultMaxDatabaseConns      = 10
	DefaultLogLevel              = "info"
	// MaxStagingMB bounds staging_memory_mb and staging_disk_mb.
	MaxStagingMB = 65536
)

// Stack is a root filesystem the stager stages for: its name (what users say with
// --stack), the rootfs of its tasks and LRPs and the user buildpacks and apps run as.
type Stack = staging.Stack

// DefaultStacks are the dev stack's stacks.
func DefaultStacks() []Stack {
	return []Stack{
		{Name: "bookworm", RootFS: "preloaded:bookworm", User: "vcap"},
		{Name: "busybox", RootFS: "preloaded:busybox", User: "root"},
	}
}

// EgressRules are drover.models.v1.EgressRule values in their protobuf JSON form
// ({"protocol": "tcp", "destinations": ["0.0.0.0/0"], "ports": [443]}).
type EgressRules []*modelsv1.EgressRule

// UnmarshalJSON decodes each rule with protojson (unknown fields are errors).
func (r *EgressRules) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(EgressRules, 0, len(raw))
	for i, m := range raw {
		rule := &modelsv1.EgressRule{}
		if err := protojson.Unmarshal(m, rule); err != nil {
			return fmt.Errorf("staging_egress_rules[%d]: %v", i, err)
		}
		out = append(out, rule)
	}
	*r = out
	return nil
}

// MarshalJSON encodes each rule with protojson.
func (r EgressRules) MarshalJSON() ([]byte, error) {
	raw := make([]json.RawMessage, 0, len(r))
	for _, rule := range r {
		b, err := protojson.Marshal(rule)
		if err != nil {
			return nil, err
		}
		raw = append(raw, b)
	}
	return json.Marshal(raw)
}

// Config is the stager's configuration file.
type Config struct {
	// ListenAddress is the gRPC server's (StagerService).
	ListenAddress string `json:"listen_address"`
	// CallbackListenAddress is the HTTPS listener of task completion callbacks.
	CallbackListenAddress string `json:"callback_listen_address"`
	// CallbackURL is the base URL the BBS reaches the callback listener at.
	CallbackURL  string `json:"callback_url"`
	DebugAddress string `json:"debug_address"`
	// DebugAdminAddress is where pprof and /log-level are served ("" on debug_address).
	DebugAdminAddress string `json:"debug_admin_address"`
	// TLS is the stager's certificate: its gRPC and callback servers' and its client
	// certificate for the BBS and the reps. Required.
	TLS        tlsconfig.Files `json:"tls"`
	BBSAddress string          `json:"bbs_address"`
	// DatabaseURL is the Postgres connection string; DatabasePasswordFile, when set,
	// holds its password (as the BBS's configuration).
	DatabaseURL            string `json:"database_url"`
	DatabasePasswordFile   string `json:"database_password_file,omitempty"`
	MaxDatabaseConnections int    `json:"max_database_connections"`
	// FileserverURL is the fileserver's base URL (tasks download from it too).
	FileserverURL            string `json:"fileserver_url"`
	FileserverSigningKeyFile string `json:"fileserver_signing_key_file"`
	// LifecyclePath is the lifecycle bundle's path in the fileserver's static directory.
	LifecyclePath      string             `json:"lifecycle_path"`
	Stacks             []Stack            `json:"stacks"`
	DefaultStack       string             `json:"default_stack"`
	StagingEgressRules EgressRules        `json:"staging_egress_rules"`
	StagingTimeout     libconfig.Duration `json:"staging_timeout"`
	StagingMemoryMB    int32              `json:"staging_memory_mb"`
	StagingDiskMB      int32              `json:"staging_disk_mb"`
	LogLevel           string             `json:"log_level"`
	// IdentityCommonNames maps callers' certificate common names to roles (nil: the
	// defaults, authz.DefaultCommonNames).
	IdentityCommonNames map[string]string `json:"identity_common_names,omitempty"`
}

// Default returns a configuration with every default filled in.
func Default() Config {
	return Config{
		ListenAddress:          DefaultListenAddress,
		CallbackListenAddress:  DefaultCallbackListenAddress,
		CallbackURL:            DefaultCallbackURL,
		DebugAddress:           DefaultDebugAddress,
		BBSAddress:             DefaultBBSAddress,
		MaxDatabaseConnections: DefaultMaxDatabaseConns,
		LifecyclePath:          DefaultLifecyclePath,
		Stacks:                 DefaultStacks(),
		DefaultStack:           DefaultStack,
		StagingTimeout:         libconfig.Duration(DefaultStagingTimeout),
		StagingMemoryMB:        DefaultStagingMemoryMB,
		StagingDiskMB:          DefaultStagingDiskMB,
		LogLevel:               DefaultLogLevel,
	}
}

// Load reads and validates the file at path over the defaults.
func Load(path string) (*Config, error) {
	return libconfig.LoadOver(path, Default())
}

// Names are the identities of callers (gRPC clients and callback posters).
func (c *Config) Names() (authz.Names, error) { return authz.ComponentNames(c.IdentityCommonNames) }

// DatabaseConnString is database_url with the password of database_password_file (the
// BBS's rule). It holds the secret: never log it.
func (c *Config) DatabaseConnString() (string, error) {
	b := bbsconfig.Config{DatabaseURL: c.DatabaseURL, DatabasePasswordFile: c.DatabasePasswordFile}
	return b.DatabaseConnString()
}

// Stack returns the stack called name.
func (c *Config) Stack(name string) (Stack, bool) {
	for _, s := range c.Stacks {
		if s.Name == name {
			return s, true
		}
	}
	return Stack{}, false
}

// StackNames are the configured stacks' names, in order.
func (c *Config) StackNames() []string {
	names := make([]string, 0, len(c.Stacks))
	for _, s := range c.Stacks {
		names = append(names, s.Name)
	}
	return names
}

// stackNamePattern is what a stack name must match.
var stackNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// userPattern is what a stack user must match.
var userPattern = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// Validate names the problem of every field that is wrong.
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("nil config")
	}
	var errs []error
	errs = append(errs, libconfig.Addresses([][2]string{
		{"listen_address", c.ListenAddress}, {"callback_listen_address", c.CallbackListenAddress}, {"bbs_address", c.BBSAddress},
	})...)
	errs = append(errs, libconfig.DebugServer(c.DebugAddress, c.DebugAdminAddress))
	if err := c.TLS.Validate(); err != nil {
		errs = append(errs, libconfig.Invalid("tls", "%v", err))
	}
	errs = append(errs, validURL("callback_url", c.CallbackURL, "https"), validURL("fileserver_url", c.FileserverURL, "http", "https"))
	if strings.TrimSpace(c.DatabaseURL) == "" {
		errs = append(errs, libconfig.Invalid("database_url", "is required"))
	}
	if c.MaxDatabaseConnections <= 0 || c.MaxDatabaseConnections > 1<<10 {
		errs = append(errs, libconfig.Invalid("max_database_connections", "must be between 1 and 1024, got %d", c.MaxDatabaseConnections))
	}
	if c.FileserverSigningKeyFile == "" {
		errs = append(errs, libconfig.Invalid("fileserver_signing_key_file", "is required"))
	}
	if p := c.LifecyclePath; p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
		errs = append(errs, libconfig.Invalid("lifecycle_path", "must be a relative path without .., got %q", p))
	}
	errs = append(errs, c.validStacks()...)
	if len(c.StagingEgressRules) > 0 {
		def := &modelsv1.TaskDefinition{Rootfs: "preloaded:x", Action: &modelsv1.Action{Action: &modelsv1.Action_Run{Run: &modelsv1.RunAction{Path: "/bin/true", User: "root"}}},
			EgressRules: c.StagingEgressRules}
		if err := models.ValidateTaskDefinition(def); err != nil {
			errs = append(errs, libconfig.Invalid("staging_egress_rules", "%v", err))
		}
	}
	if c.StagingTimeout <= 0 {
		errs = append(errs, libconfig.Invalid("staging_timeout", "must be positive, got %s", c.StagingTimeout.Duration()))
	}
	if c.StagingMemoryMB <= 0 || c.StagingMemoryMB > MaxStagingMB {
		errs = append(errs, libconfig.Invalid("staging_memory_mb", "must be between 1 and %d, got %d", MaxStagingMB, c.StagingMemoryMB))
	}
	if c.StagingDiskMB <= 0 || c.StagingDiskMB > MaxStagingMB {
		errs = append(errs, libconfig.Invalid("staging_disk_mb", "must be between 1 and %d, got %d", MaxStagingMB, c.StagingDiskMB))
	}
	if _, err := logging.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, libconfig.Invalid("log_level", "%v", err))
	}
	if _, err := c.Names(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validStacks checks stacks and default_stack.
func (c *Config) validStacks() []error {
	var errs []error
	if len(c.Stacks) == 0 {
		errs = append(errs, libconfig.Invalid("stacks", "must list at least one stack"))
	}
	seen := map[string]bool{}
	for i, s := range c.Stacks {
		field := fmt.Sprintf("stacks[%d]", i)
		if !stackNamePattern.MatchString(s.Name) {
			errs = append(errs, libconfig.Invalid(field+".name", "must match %s, got %q", stackNamePattern, s.Name))
		}
		if seen[s.Name] {
			errs = append(errs, libconfig.Invalid(field+".name", "%q is listed twice", s.Name))
		}
		seen[s.Name] = true
		if name, ok := strings.CutPrefix(s.RootFS, "preloaded:"); !ok || name == "" {
			errs = append(errs, libconfig.Invalid(field+".rootfs", "must be preloaded:NAME, got %q", s.RootFS))
		}
		if !userPattern.MatchString(s.User) {
			errs = append(errs, libconfig.Invalid(field+".user", "must match %s, got %q", userPattern, s.User))
		}
	}
	if _, ok := c.Stack(c.DefaultStack); !ok {
		errs = append(errs, libconfig.Invalid("default_stack", "%q is not one of stacks (%s)", c.DefaultStack, strings.Join(c.StackNames(), ", ")))
	}
	return errs
}

// validURL checks an absolute URL with one of schemes.
func validURL(field, raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return libconfig.Invalid(field, "is required")
	case err != nil:
		return libconfig.Invalid(field, "%v", err)
	case u.Host == "":
		return libconfig.Invalid(field, "must be an absolute URL, got %q", raw)
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return nil
		}
	}
	return libconfig.Invalid(field, "scheme must be %s, got %q", strings.Join(schemes, " or "), u.Scheme)
}

// LogValue renders the configuration for the start-up log line without the database
// password.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("listen_address", c.ListenAddress),
		slog.String("callback_listen_address", c.CallbackListenAddress),
		slog.String("callback_url", c.CallbackURL),
		slog.String("debug_address", c.DebugAddress),
		slog.String("bbs_address", c.BBSAddress),
		slog.String("database_url", libconfig.RedactURL(c.DatabaseURL)),
		slog.String("database_password_file", c.DatabasePasswordFile),
		slog.String("fileserver_url", c.FileserverURL),
		slog.String("lifecycle_path", c.LifecyclePath),
		slog.Any("stacks", c.StackNames()),
		slog.String("default_stack", c.DefaultStack),
		slog.Int("staging_egress_rules", len(c.StagingEgressRules)),
		slog.String("staging_timeout", c.StagingTimeout.String()),
		slog.Int("staging_memory_mb", int(c.StagingMemoryMB)),
		slog.Int("staging_disk_mb", int(c.StagingDiskMB)),
		slog.String("log_level", c.LogLevel),
	)
}
