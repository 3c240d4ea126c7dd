package builder

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Release is what a buildpack's bin/release prints (Heroku's release YAML).
type Release struct {
	DefaultProcessTypes map[string]string `yaml:"default_process_types"`
	ConfigVars          map[string]string `yaml:"config_vars"`
	Addons              []string          `yaml:"addons"`
}

// ParseRelease reads bin/release output. Empty output is an empty release.
func ParseRelease(b []byte) (Release, error) {
	var r Release
	if strings.TrimSpace(string(b)) == "" {
		return r, nil
	}
	if err := yaml.Unmarshal(b, &r); err != nil {
		return Release{}, fmt.Errorf("release YAML: %w", err)
	}
	var bad []string
	for name, cmd := range r.DefaultProcessTypes {
		if !procfileLine.MatchString(name + ": x") {
			bad = append(bad, fmt.Sprintf("process type name %q: letters, digits, _ and - only", name))
		}
		if strings.TrimSpace(cmd) == "" {
			bad = append(bad, fmt.Sprintf("default_process_types.%s: empty command", name))
		}
	}
	if len(bad) > 0 {
		return Release{}, fmt.Errorf("release YAML: %s", strings.Join(bad, "; "))
	}
	return r, nil
}

// ProcessTypes merges a release's default process types with an app's Procfile, whose
// entries win.
func ProcessTypes(release, procfile map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range release {
		out[k] = strings.TrimSpace(v)
	}
	for k, v := range procfile {
		out[k] = v
	}
	return out
}
