package evacuation

import (
	"log/slog"
	"os"
	"syscall"

	"github.com/tedsuo/ifrit"

	"drover.dev/lib/logging"
)

// OnSignal wraps the rep's group so that the first SIGTERM or SIGINT starts the
// evacuation instead of stopping the group (the evacuator then ends the group).
// Every other signal, and any signal once the cell evacuates, is passed on: a second
// SIGTERM stops the rep at once.
func OnSignal(group ifrit.Runner, state *State, logger *slog.Logger) ifrit.Runner {
	logger = logging.OrDiscard(logger)
	return ifrit.RunFunc(func(signals <-chan os.Signal, ready chan<- struct{}) error {
		p := ifrit.Background(group)
		groupReady := p.Ready()
		for {
			select {
			case <-groupReady:
				close(ready)
				groupReady = nil
			case err := <-p.Wait():
				return err
			case sig := <-signals:
				if (sig == syscall.SIGTERM || sig == os.Interrupt) && !state.Start() {
					logger.Info("evacuating-on-signal", "signal", sig.String())
					continue
				}
				p.Signal(sig)
			}
		}
	})
}
