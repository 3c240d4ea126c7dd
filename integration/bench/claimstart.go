package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"drover.dev/bbs/client"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// simulatedCells is how many cells the claim+start scenario spreads instances over.
const simulatedCells = 20

// ClaimStart claims then starts each of the ActualLRPs named by keys, as a rep does
// once its container is healthy, concurrency at a time through the clients (worker w
// uses clients[w % len(clients)]); every key must name a distinct UNCLAIMED instance.
// It times the claim, the start and the pair.
func ClaimStart(ctx context.Context, clients []*client.Client, keys []*modelsv1.ActualLRPKey, concurrency int) (*ClaimStartResult, error) {
	if err := checkClients(clients); err != nil {
		return nil, fmt.Errorf("claim+start: %w", err)
	}
	claims := make([]time.Duration, len(keys))
	starts := make([]time.Duration, len(keys))
	res, err := RunConcurrent(ctx, len(keys), concurrency, func(ctx context.Context, w, i int) error {
		c, key := clients[w%len(clients)], keys[i]
		ik := &modelsv1.ActualLRPInstanceKey{
			InstanceGuid: uuid.NewString(),
			CellId:       fmt.Sprintf("bench-cell-%02d", i%simulatedCells),
		}
		t0 := time.Now()
		_, err := c.ClaimActualLRP(ctx, &bbsv1.ClaimActualLRPRequest{
			ProcessGuid: key.GetProcessGuid(), Index: key.GetIndex(), ActualLrpInstanceKey: ik,
		})
		if err != nil {
			return fmt.Errorf("claim %s/%d: %w", key.GetProcessGuid(), key.GetIndex(), err)
		}
		t1 := time.Now()
		_, err = c.StartActualLRP(ctx, &bbsv1.StartActualLRPRequest{
			ActualLrpKey: key, ActualLrpInstanceKey: ik, ActualLrpNetInfo: netInfo(i),
		})
		if err != nil {
			return fmt.Errorf("start %s/%d: %w", key.GetProcessGuid(), key.GetIndex(), err)
		}
		claims[i], starts[i] = t1.Sub(t0), time.Since(t1)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim+start: %w", err)
	}
	return &ClaimStartResult{Pairs: NewThroughput(concurrency, res), Claim: Summarize(claims), Start: Summarize(starts)}, nil
}

// netInfo is where the i-th simulated instance listens: its cell's address and a host
// port mapped to the app's port 8080.
func netInfo(i int) *modelsv1.ActualLRPNetInfo {
	return &modelsv1.ActualLRPNetInfo{
		Address:          fmt.Sprintf("10.0.0.%d", 10+i%simulatedCells),
		Ports:            []*modelsv1.PortMapping{{ContainerPort: 8080, HostPort: uint32(61000 + i%4000)}},
		InstanceAddress:  fmt.Sprintf("10.255.%d.%d", (i/250)%250, 1+i%250),
		PreferredAddress: modelsv1.PreferredAddress_PREFERRED_ADDRESS_HOST,
	}
}

// InstanceKeys returns the keys of the first n instances of lrps, LRP by LRP and index
// by index.
func InstanceKeys(lrps []*modelsv1.DesiredLRP, n int) []*modelsv1.ActualLRPKey {
	keys := make([]*modelsv1.ActualLRPKey, 0, max(n, 0))
	for _, lrp := range lrps {
		for index := range lrp.GetInstances() {
			if len(keys) >= n {
				return keys
			}
			keys = append(keys, &modelsv1.ActualLRPKey{ProcessGuid: lrp.GetProcessGuid(), Index: index, Domain: lrp.GetDomain()})
		}
	}
	return keys
}

// FirstInstances returns the key of index 0 of each LRP.
func FirstInstances(lrps []*modelsv1.DesiredLRP) []*modelsv1.ActualLRPKey {
	keys := make([]*modelsv1.ActualLRPKey, len(lrps))
	for i, lrp := range lrps {
		keys[i] = &modelsv1.ActualLRPKey{ProcessGuid: lrp.GetProcessGuid(), Index: 0, Domain: lrp.GetDomain()}
	}
	return keys
}
