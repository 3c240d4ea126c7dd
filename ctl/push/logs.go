package push

import (
	"context"
	"fmt"
	"time"

	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// logDrainTimeout bounds how long a stopped instance's log stream may still deliver
// lines before it is cut.
const logDrainTimeout = 3 * time.Second

// logFollower prints the lines of one stream (an instance's) as they arrive.
type logFollower struct {
	out *progress
	// source names lines that carry none.
	source string

	cancel context.CancelFunc
	done   chan struct{}
}

// start runs follow in the background; what names the stream in a warning.
func (l *logFollower) start(ctx context.Context, what string, follow func(context.Context, func([]*repv1.LogLine)) error) {
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		if err := follow(ctx, l.emit); err != nil && ctx.Err() == nil {
			l.out.printf("warning: %s: %v", what, err)
		}
	}()
}

func (l *logFollower) emit(lines []*repv1.LogLine) {
	for _, line := range lines {
		l.out.logLine(logPrefix(l.source, line), line.GetText())
	}
}

// drain lets the stream deliver the last lines of a finished task: it ends by itself
// when the cell deletes the container; after logDrainTimeout it is cut.
func (l *logFollower) drain() {
	if l.done == nil {
		return
	}
	t := time.NewTimer(logDrainTimeout)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
	}
	l.stop()
}

// stop ends the stream and waits for it.
func (l *logFollower) stop() {
	if l.done == nil {
		return
	}
	l.cancel()
	<-l.done
}

// logPrefix is "   [SOURCE/INDEX] ": the line's source, else source.
func logPrefix(source string, line *repv1.LogLine) string {
	if s := line.GetSource(); s != "" {
		source = s
	}
	return fmt.Sprintf("   [%s/%d] ", source, line.GetIndex())
}
