package commands

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"drover.dev/ctl/target"
)

// DefaultTimeout bounds each BBS call unless --timeout says otherwise.
const DefaultTimeout = 10 * time.Second

// globalOptions are the flags every command accepts, before or after its name.
type globalOptions struct {
	target  target.Settings
	timeout time.Duration
	// timeoutSet says --timeout was given (evacuate --wait has its own default).
	timeoutSet bool
	json       bool
}

// register defines the global flags on fs.
func (o *globalOptions) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.target.Address, "bbs-address", o.target.Address,
		"BBS gRPC address `HOST:PORT` (env "+target.EnvAddress+"; default "+target.DefaultAddress+")")
	fs.StringVar(&o.target.CACert, "ca-cert", o.target.CACert,
		"CA certificate `FILE` (env "+target.EnvCACert+"; default .drover/certs/ca.crt)")
	fs.StringVar(&o.target.ClientCert, "client-cert", o.target.ClientCert,
		"client certificate `FILE` (env "+target.EnvClientCert+"; default .drover/certs/client.crt)")
	fs.StringVar(&o.target.ClientKey, "client-key", o.target.ClientKey,
		"client key `FILE` (env "+target.EnvClientKey+"; default .drover/certs/client.key)")
	fs.Var(&durationValue{d: &o.timeout, set: &o.timeoutSet}, "timeout", "time limit per BBS call: a `DURATION` (10s, 1m) or seconds")
	fs.BoolVar(&o.json, "json", o.json, "print one JSON object per line instead of a table")
}

// flagError words a flag the command line got wrong as droverctl always has, as a
// usage error.
func flagError(_ *cobra.Command, err error) error {
	var (
		unknown *pflag.NotExistError
		invalid *pflag.InvalidValueError
		missing *pflag.ValueRequiredError
	)
	switch {
	case errors.As(err, &unknown):
		return usagef("flag provided but not defined: -%s", cmp.Or(unknown.GetSpecifiedShortnames(), unknown.GetSpecifiedName()))
	case errors.As(err, &invalid):
		return usagef("invalid value %q for flag -%s: %v", invalid.GetValue(), invalid.GetFlag().Name, errors.Unwrap(invalid))
	case errors.As(err, &missing):
		return usagef("flag needs an argument: -%s", cmp.Or(missing.GetSpecifiedShortnames(), missing.GetSpecifiedName()))
	}
	return usagef("%v", err)
}

// fileFlag defines "-f, --file FILE" on cmd; "--f" is accepted too, as it always was.
func fileFlag(cmd *cobra.Command, file *string, usage string) {
	cmd.Flags().StringVarP(file, "file", "f", "", usage)
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "f" {
			name = "file"
		}
		return pflag.NormalizedName(name)
	})
	_ = cmd.MarkFlagFilename("file", "json") // the flag exists: no error
}

// ParseDuration reads a Go duration ("90s", "1h30m") or a whole number of seconds
// ("90"). Negative values are refused.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > math.MaxInt64/int64(time.Second) {
			return 0, fmt.Errorf("%q seconds is too long", s)
		}
		d = time.Duration(n) * time.Second
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("%q is neither a duration (90s, 1h) nor a number of seconds", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// TTLSeconds converts a TTL to the whole seconds the BBS takes; 0 means forever.
func TTLSeconds(d time.Duration) (uint32, error) {
	switch {
	case d < 0:
		return 0, fmt.Errorf("ttl %s is negative", d)
	case d%time.Second != 0:
		return 0, fmt.Errorf("ttl %s is not a whole number of seconds", d)
	case d/time.Second > math.MaxUint32:
		return 0, fmt.Errorf("ttl %s is too long", d)
	}
	return uint32(d / time.Second), nil
}

// durationValue is a pflag.Value for ParseDuration; set, when not nil, records that
// the flag was given.
type durationValue struct {
	d   *time.Duration
	set *bool
}

func (v *durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return ""
	}
	return v.d.String()
}

func (v *durationValue) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	if v.set != nil {
		*v.set = true
	}
	return nil
}

func (v *durationValue) Type() string { return "duration" }

// uint64Value is a pflag.Value that remembers whether it was set.
type uint64Value struct {
	n   uint64
	set bool
}

func (v *uint64Value) String() string {
	if !v.set {
		return ""
	}
	return strconv.FormatUint(v.n, 10)
}

func (v *uint64Value) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return errors.New("not a non-negative integer")
	}
	v.n, v.set = n, true
	return nil
}

func (v *uint64Value) Type() string { return "uint" }
