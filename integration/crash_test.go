package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"drover.dev/bbs/client"
	"drover.dev/devstack/devstacktest"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// ackLog records the writes the BBS acknowledged.
type ackLog struct {
	mu      sync.Mutex
	lrps    []string
	domains []string
	failed  atomic.Int64
}

func (l *ackLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lrps) + len(l.domains)
}

// writeLoop desires LRPs and upserts domains in turn until ctx ends, recording each
// acknowledged write; failed writes (the BBS is down) are counted and retried with the
// next name.
// base is the LRP to desire under new names; it is cloned, never changed.
func writeLoop(ctx context.Context, c *client.Client, base *modelsv1.DesiredLRP, writer int, log *ackLog) {
	for i := 0; ctx.Err() == nil; i++ {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		if i%2 == 0 {
			guid := fmt.Sprintf("w%d-lrp-%d", writer, i)
			lrp := proto.CloneOf(base)
			lrp.ProcessGuid = guid
			_, err = c.DesireLRP(callCtx, &bbsv1.DesireLRPRequest{DesiredLrp: lrp})
			if err == nil {
				log.mu.Lock()
				log.lrps = append(log.lrps, guid)
				log.mu.Unlock()
			}
		} else {
			domain := fmt.Sprintf("w%d-domain-%d", writer, i)
			_, err = c.UpsertDomain(callCtx, &bbsv1.UpsertDomainRequest{Domain: domain})
			if err == nil {
				log.mu.Lock()
				log.domains = append(log.domains, domain)
				log.mu.Unlock()
			}
		}
		cancel()
		if err != nil {
			log.failed.Add(1)
			select { // do not spin while the BBS is down
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// TestKill9LosesNoAcknowledgedWrite kills the BBS with SIGKILL in the middle of a stream
// of writes, restarts it, and checks that every write it had acknowledged is there.
func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	s := devstacktest.New(t, devstacktest.Options{})
	bbs := s.BBS[0]
	c := devstacktest.Client(t, s, 0)
	log := &ackLog{}
	base := seedLRP(t, "base", 1)

	ctx, stopWriters := context.WithCancel(t.Context())
	var writers sync.WaitGroup
	for w := range 3 {
		writers.Go(func() { writeLoop(ctx, c, base, w, log) })
	}
	defer func() {
		stopWriters()
		writers.Wait()
	}()

	require.Eventually(t, func() bool { return log.count() >= 60 }, time.Minute, 10*time.Millisecond,
		"the writers got too few acknowledgements before the kill")
	require.NoError(t, bbs.Kill(t.Context()))
	ackedAtKill := log.count()
	require.Eventually(t, func() bool { return log.failed.Load() > 0 }, 30*time.Second, 10*time.Millisecond,
		"no write failed while the BBS was dead")

	require.NoError(t, bbs.Start(t.Context()))
	require.Eventually(t, func() bool { return log.count() >= ackedAtKill+30 }, time.Minute, 10*time.Millisecond,
		"the writers did not resume after the restart")
	stopWriters()
	writers.Wait()
	t.Logf("%d writes acknowledged (%d before the kill), %d failed", log.count(), ackedAtKill, log.failed.Load())

	lrps, err := c.ListDesiredLRPs(callCtx(t), &bbsv1.ListDesiredLRPsRequest{})
	require.NoError(t, err)
	stored := map[string]bool{}
	for _, lrp := range lrps.GetDesiredLrps() {
		stored[lrp.GetProcessGuid()] = true
	}
	for _, guid := range log.lrps {
		require.True(t, stored[guid], "acknowledged LRP %s is missing", guid)
	}
	domains, err := c.ListDomains(callCtx(t), &bbsv1.ListDomainsRequest{})
	require.NoError(t, err)
	fresh := map[string]bool{}
	for _, d := range domains.GetDomains() {
		fresh[d] = true
	}
	for _, d := range log.domains {
		require.True(t, fresh[d], "acknowledged domain %s is missing", d)
	}
	instances := map[string]int{}
	for _, lrp := range listActualLRPs(t, c, &bbsv1.ListActualLRPsRequest{}) {
		instances[lrp.GetProcessGuid()]++
	}
	for _, guid := range log.lrps {
		require.Equal(t, 1, instances[guid], "acknowledged LRP %s has no instance", guid)
	}
}
