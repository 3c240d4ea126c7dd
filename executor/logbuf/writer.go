package logbuf

import (
	"io"
	"sync"
	"time"

	"drover.dev/executor"
)

// MaxLineBytes is where a line is cut (upstream's MAX_MESSAGE_SIZE).
const MaxLineBytes = 61440

// Stream names.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// Writer is an io.Writer that splits output on \n and \r into lines of at most
// MaxLineBytes, tags them and appends them to a Buffer. Call Flush to emit a last line
// without a terminator. It is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	buf     *Buffer
	guid    string
	source  string
	stream  string
	pending []byte
	now     func() time.Time
}

// NewWriter returns a writer that tags lines with the container guid, source and stream.
func NewWriter(buf *Buffer, guid, source, stream string) *Writer {
	return &Writer{buf: buf, guid: guid, source: source, stream: stream, now: time.Now}
}

// Write splits p into lines; it never fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range p {
		if c == '\n' || c == '\r' {
			w.emit()
			continue
		}
		w.pending = append(w.pending, c)
		if len(w.pending) >= MaxLineBytes {
			w.emit()
		}
	}
	return len(p), nil
}

// Flush emits the pending partial line, if any.
func (w *Writer) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emit()
}

// emit appends the pending bytes as one line; empty lines are skipped. w.mu must be held.
func (w *Writer) emit() {
	if len(w.pending) == 0 {
		return
	}
	w.buf.Append(executor.LogLine{
		ContainerGuid: w.guid,
		Source:        w.source,
		Stream:        w.stream,
		Text:          string(w.pending),
		Time:          w.now(),
	})
	w.pending = w.pending[:0]
}

// Sink hands out writers into one container's buffer (it satisfies steps.LogSink).
type Sink struct {
	Buffer *Buffer
	Guid   string
}

// Writer returns a line writer tagged with source and stream.
func (s Sink) Writer(source, stream string) io.Writer {
	return NewWriter(s.Buffer, s.Guid, source, stream)
}
