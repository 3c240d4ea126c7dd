package serve

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tedsuo/ifrit"
)

var errStopped = errors.New("stopped")

// fakeServer serves until stop is closed; what Serve returns then is configurable.
type fakeServer struct {
	stop       chan struct{}
	hardCalls  atomic.Int32
	beforeStop atomic.Int32
	serveErr   error         // returned by Serve at once when set
	hangs      bool          // Graceful never returns by itself
	release    chan struct{} // closed by Hard
}

func newFake() *fakeServer {
	return &fakeServer{stop: make(chan struct{}), release: make(chan struct{})}
}

func (f *fakeServer) runner(listenErr error) *Runner {
	return &Runner{
		Name: "test-server",
		Listen: func() (net.Listener, error) {
			if listenErr != nil {
				return nil, listenErr
			}
			return net.Listen("tcp", "127.0.0.1:0")
		},
		Serve: func(lis net.Listener) error {
			defer lis.Close()
			if f.serveErr != nil {
				return f.serveErr
			}
			<-f.stop
			return errStopped
		},
		IsStopped:  func(err error) bool { return errors.Is(err, errStopped) },
		BeforeStop: func() { f.beforeStop.Add(1) },
		Graceful: func() {
			if f.hangs {
				<-f.release
			}
			close(f.stop)
		},
		Hard: func() {
			f.hardCalls.Add(1)
			close(f.release)
		},
		Grace:  50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	}
}

func waitExit(t *testing.T, p ifrit.Process) error {
	t.Helper()
	select {
	case err := <-p.Wait():
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("runner did not exit")
		return nil
	}
}

func TestStopsGracefullyOnSignal(t *testing.T) {
	f := newFake()
	p := ifrit.Invoke(f.runner(nil))
	p.Signal(os.Interrupt)
	require.NoError(t, waitExit(t, p))
	require.Equal(t, int32(1), f.beforeStop.Load())
	require.Equal(t, int32(0), f.hardCalls.Load(), "graceful stop sufficed")
}

func TestStopsHardAfterGracePeriod(t *testing.T) {
	f := newFake()
	f.hangs = true
	p := ifrit.Invoke(f.runner(nil))
	p.Signal(os.Interrupt)
	require.NoError(t, waitExit(t, p))
	require.Equal(t, int32(1), f.hardCalls.Load())
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name      string
		listenErr error
		serveErr  error
		want      string
	}{
		{name: "listen fails", listenErr: errors.New("address in use"), want: "test-server listen: address in use"},
		{name: "serve fails", serveErr: errors.New("accept: boom"), want: "accept: boom"},
		{name: "serve ends on its own", serveErr: errStopped, want: "stopped unexpectedly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.serveErr = tt.serveErr
			p := ifrit.Background(f.runner(tt.listenErr))
			err := waitExit(t, p)
			require.ErrorContains(t, err, tt.want)
			if tt.listenErr != nil {
				select {
				case <-p.Ready():
					t.Fatal("ready although listening failed")
				default:
				}
			}
		})
	}
}
