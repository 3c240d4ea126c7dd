package containerd

import (
	"context"
	"io"
	"os"
	"time"
)

// Tailing of process log files.
const (
	tailInterval = 100 * time.Millisecond
	// maxLogBytes bounds a process log file: once the tailer has copied all of a file
	// larger than this, it truncates it (bytes the shim appends between the last read
	// and the truncation are lost).
	maxLogBytes = 8 << 20
)

// tailer copies what is appended to a log file to a writer until stopped; stopping
// copies what is left first.
type tailer struct {
	path   string
	w      io.Writer
	offset int64
	stop   chan struct{}
	done   chan struct{}
}

// startTailer tails path from its current end (fromEnd) or from the start.
func startTailer(ctx context.Context, path string, w io.Writer, fromEnd bool) *tailer {
	if w == nil {
		w = io.Discard
	}
	t := &tailer{path: path, w: w, stop: make(chan struct{}), done: make(chan struct{})}
	if fromEnd {
		if info, err := os.Stat(path); err == nil {
			t.offset = info.Size()
		}
	}
	go t.run(ctx)
	return t
}

func (t *tailer) run(ctx context.Context) {
	defer close(t.done)
	tick := time.NewTicker(tailInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.stop:
			t.drain(ctx)
			return
		case <-tick.C:
			t.copyNew()
		}
	}
}

// drainSettle is how long the output file must stay unchanged after the process exited
// before the tailer ends: when the process is deleted the shim stops its logger, whose
// copiers may still be writing the last bytes. drainMax bounds the wait.
const (
	drainSettle = 50 * time.Millisecond
	drainMax    = time.Second
)

// drain copies what is left until the file has stopped growing.
func (t *tailer) drain(ctx context.Context) {
	deadline := time.Now().Add(drainMax)
	t.copyNew()
	for time.Now().Before(deadline) {
		before := t.offset
		select {
		case <-ctx.Done():
			return
		case <-time.After(drainSettle):
		}
		t.copyNew()
		if t.offset == before {
			return
		}
	}
}

// copyNew copies the bytes after offset, and truncates a large file fully copied.
func (t *tailer) copyNew() {
	f, err := os.OpenFile(t.path, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return
	}
	if info.Size() < t.offset {
		t.offset = 0
	}
	if info.Size() == t.offset {
		return
	}
	n, _ := io.Copy(t.w, io.NewSectionReader(f, t.offset, info.Size()-t.offset))
	t.offset += n
	if t.offset >= maxLogBytes {
		if info, err := f.Stat(); err == nil && info.Size() == t.offset && f.Truncate(0) == nil {
			t.offset = 0
		}
	}
}

// Stop copies what is left and ends the tailer.
func (t *tailer) Stop() {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
}
