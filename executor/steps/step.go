// Package steps turns an action tree (modelsv1.Action) into a tree of steps that run
// processes in one container, with upstream Diego's semantics: run, download, upload,
// timeout, try, serial, parallel, codependent and emit_progress. It also holds the health
// check schedule (a pure function) and the health runner built on it.
package steps

import (
	"context"
	"io"
	"net/http"
	"time"

	"drover.dev/executor"
)

// Step is one node of a step tree. Run blocks until the step is done. Cancelling ctx
// stops the step (processes get SIGTERM, then SIGKILL after the grace period) and Run
// returns ErrCancelled or an error saying the process had to be killed. ready is
// called at most once, when the step counts as started (a run step: its process
// exists); it may be nil.
type Step interface {
	Run(ctx context.Context, ready func()) error
}

// DownloadRequest is what a download asks of the Downloader. Its fields match
// download.Request, so the engine's caller can convert one into the other.
type DownloadRequest struct {
	URL               string
	CacheKey          string
	ChecksumAlgorithm string
	ChecksumValue     string
}

// Downloader fetches a URL (through a cache when CacheKey is set) and returns the
// artifact as a tar stream, verified against the checksum when one is given.
type Downloader interface {
	Fetch(ctx context.Context, req DownloadRequest) (io.ReadCloser, error)
}

// DownloaderFunc adapts a function to Downloader.
type DownloaderFunc func(ctx context.Context, req DownloadRequest) (io.ReadCloser, error)

// Fetch calls f.
func (f DownloaderFunc) Fetch(ctx context.Context, req DownloadRequest) (io.ReadCloser, error) {
	return f(ctx, req)
}

// LogSink gives writers for a container's log under a source and a stream
// ("stdout" or "stderr"). A writer that has a Flush method is flushed when its
// process ends.
type LogSink interface {
	Writer(source, stream string) io.Writer
}

// Default timings and limits (upstream's).
const (
	DefaultGracePeriod = 10 * time.Second
	// ExitTimeout is how long a killed process may take to go away.
	ExitTimeout = time.Second
	// MaxErrorBytes bounds download error messages.
	MaxErrorBytes = 1024
	// UploadTimeout bounds one upload.
	UploadTimeout = 10 * time.Minute
)

// Deps is what the steps of one container run against.
type Deps struct {
	Runtime executor.Runtime
	Guid    string
	// NetInfo gives the networking env vars of every run step.
	NetInfo executor.NetInfo
	// Logs receives process output and progress lines; nil discards them.
	Logs LogSink
	// Downloader serves download actions; nil makes them fail.
	Downloader Downloader
	// HTTPClient posts uploads; nil uses a client with UploadTimeout.
	HTTPClient *http.Client
	// GracePeriod is the wait between SIGTERM and SIGKILL (0 = DefaultGracePeriod).
	GracePeriod time.Duration
	// OOMKilled reports whether the container saw an out-of-memory kill; may be nil.
	OOMKilled func() bool
	// DefaultSource is the log source of actions that name none ("APP" if empty).
	DefaultSource string
	// Reattach makes run steps find their processes (by ID) instead of starting them,
	// and makes download and upload steps succeed at once: the tree already ran before
	// an executor restart.
	Reattach bool
	// Detached, once closed, makes run steps return ErrDetached without signalling their
	// processes: the executor is shutting down and a later one will adopt them.
	Detached <-chan struct{}
	// SuppressExitStatus keeps "Exit status N" out of the log (monitor runs).
	SuppressExitStatus bool
	// DownloadSlots and UploadSlots limit concurrent transfers when not nil.
	DownloadSlots chan struct{}
	UploadSlots   chan struct{}
}

func (d *Deps) gracePeriod() time.Duration {
	if d.GracePeriod > 0 {
		return d.GracePeriod
	}
	return DefaultGracePeriod
}

// writer returns the log writer for a source and stream, or io.Discard.
func (d *Deps) writer(source, stream string) io.Writer {
	if d.Logs == nil {
		return io.Discard
	}
	return d.Logs.Writer(source, stream)
}

func (d *Deps) oomKilled() bool {
	return d.OOMKilled != nil && d.OOMKilled()
}

// signalReady calls ready when it is not nil.
func signalReady(ready func()) {
	if ready != nil {
		ready()
	}
}

// flush flushes a writer that buffers a partial line.
func flush(w io.Writer) {
	if f, ok := w.(interface{ Flush() }); ok {
		f.Flush()
	}
}

// acquire takes a slot of a limiter (nil = unlimited) and returns its release.
func acquire(ctx context.Context, slots chan struct{}) (func(), error) {
	if slots == nil {
		return func() {}, nil
	}
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, ErrCancelled
	}
}

// println writes one line to the log under source and stream.
func (d *Deps) println(source, stream, msg string) {
	w := d.writer(source, stream)
	_, _ = io.WriteString(w, msg+"\n")
	flush(w)
}
