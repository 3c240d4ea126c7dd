package output

import (
	"strconv"
	"time"

	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// LogTimeLayout is how log line times are printed (UTC, milliseconds).
const LogTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatLogLine renders "TIME [SOURCE/INDEX] text" for an instance's line and
// "TIME [SOURCE] text" for a task's (no process guid). The text keeps its tabs and
// line breaks; other control characters are escaped (PrintableLog).
func FormatLogLine(l *repv1.LogLine) string {
	source := l.GetSource()
	if source == "" {
		source = "APP"
	}
	if l.GetProcessGuid() != "" {
		source += "/" + strconv.Itoa(int(l.GetIndex()))
	}
	return time.Unix(0, l.GetTimestamp()).UTC().Format(LogTimeLayout) + " [" + Printable(source) + "] " + PrintableLog(l.GetText())
}

// LogLineJSON is the JSON line of one log line.
type LogLineJSON struct {
	Time          string `json:"time"`
	ContainerGuid string `json:"container_guid"`
	ProcessGuid   string `json:"process_guid,omitempty"`
	Index         int32  `json:"index"`
	Source        string `json:"source"`
	Stream        string `json:"stream"`
	Text          string `json:"text"`
}

// LogLineView is the JSON view of a log line.
func LogLineView(l *repv1.LogLine) LogLineJSON {
	return LogLineJSON{
		Time:          time.Unix(0, l.GetTimestamp()).UTC().Format(time.RFC3339Nano),
		ContainerGuid: l.GetContainerGuid(),
		ProcessGuid:   l.GetProcessGuid(),
		Index:         l.GetIndex(),
		Source:        l.GetSource(),
		Stream:        l.GetStream(),
		Text:          l.GetText(),
	}
}
