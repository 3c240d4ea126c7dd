package config

import "log/slog"

// LogValue is the configuration as the start-up log shows it: every field, an inline
// nats_password redacted (nats_password_file shows only the file's name).
func (c Config) LogValue() slog.Value {
	type fields Config // without this method: logged field by field, as JSON
	shown := fields(c)
	if shown.NATSPassword != "" {
		shown.NATSPassword = "[redacted]"
	}
	return slog.AnyValue(shown)
}
