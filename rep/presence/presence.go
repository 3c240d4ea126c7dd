// Package presence keeps the cell's presence alive in the BBS: it heartbeats the cell's
// address, zone, capacity, rootfs providers and placement tags every interval with a TTL.
package presence

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"drover.dev/executor"
	"drover.dev/lib/logging"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"drover.dev/rep/translate"
)

// heartbeatTimeout bounds one heartbeat call.
const heartbeatTimeout = 5 * time.Second

// Config describes the cell and the heartbeat schedule.
type Config struct {
	CellID                string
	RepAddress            string
	Zone                  string
	PlacementTags         []string
	OptionalPlacementTags []string
	TTL                   time.Duration
	Interval              time.Duration
}

// Build is the presence the cell announces; capacity and rootfs providers come from
// the executor.
func Build(cfg Config, exec executor.Client) *modelsv1.CellPresence {
	return &modelsv1.CellPresence{
		CellId:                cfg.CellID,
		RepAddress:            cfg.RepAddress,
		Zone:                  cfg.Zone,
		Capacity:              translate.Capacity(exec.TotalResources()),
		RootfsProviders:       exec.RootFSProviders(),
		PlacementTags:         cfg.PlacementTags,
		OptionalPlacementTags: cfg.OptionalPlacementTags,
	}
}

// Runner heartbeats until signalled. It does not remove the presence when it stops:
// the presence expires after its TTL, which keeps a quickly restarted rep's cell alive.
// Only Remove (at the end of an evacuation) takes it out, for good.
type Runner struct {
	// mu orders heartbeats and Remove, so that no heartbeat lands after the removal.
	mu         sync.Mutex
	removed    bool
	cfg        Config
	exec       executor.Client
	cells      bbsv1.CellServiceClient
	logger     *slog.Logger
	heartbeats *prometheus.CounterVec
}

// New makes a presence runner; reg may be nil.
func New(cfg Config, exec executor.Client, cells bbsv1.CellServiceClient, reg prometheus.Registerer, logger *slog.Logger) (*Runner, error) {
	r := &Runner{cfg: cfg, exec: exec, cells: cells, logger: logging.OrDiscard(logger),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rep_presence_heartbeats_total", Help: "Cell presence heartbeats sent to the BBS, by result.",
		}, []string{"result"})}
	if reg != nil {
		if err := reg.Register(r.heartbeats); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// ErrRemoved is returned by Heartbeat once the presence was removed.
var ErrRemoved = errors.New("cell presence was removed")

// Heartbeat sends the presence once.
func (r *Runner) Heartbeat(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed {
		return ErrRemoved
	}
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	ttl := uint32((r.cfg.TTL + time.Second - 1) / time.Second)
	_, err := r.cells.HeartbeatCell(ctx, &bbsv1.HeartbeatCellRequest{CellPresence: Build(r.cfg, r.exec), TtlSeconds: ttl})
	if err != nil {
		r.heartbeats.WithLabelValues("error").Inc()
		return err
	}
	r.heartbeats.WithLabelValues("ok").Inc()
	return nil
}

// Remove stops the heartbeats for good and deletes the cell's presence from the BBS.
func (r *Runner) Remove(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = true
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	_, err := r.cells.RemoveCell(ctx, &bbsv1.RemoveCellRequest{CellId: r.cfg.CellID})
	return err
}

// Run heartbeats at once, becomes ready, and then heartbeats every interval until
// signalled; failures are logged and retried at the next tick.
func (r *Runner) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	beat := func() {
		if err := r.Heartbeat(ctx); err != nil && !errors.Is(err, ErrRemoved) {
			r.logger.Error("failed-to-heartbeat-presence", "error", err.Error())
		}
	}
	beat()
	close(ready)
	r.logger.Info("presence-started", "ttl", r.cfg.TTL.String(), "interval", r.cfg.Interval.String())
	ticker := time.NewTicker(r.cfg.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			beat()
		case <-signals:
			r.logger.Info("presence-stopped")
			return nil
		}
	}
}
