package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

func TestNewDesiredLRPIsValid(t *testing.T) {
	for _, instances := range []int32{1, 100} {
		lrp := NewDesiredLRP(ProcessGuid(DesireDomain, 7), DesireDomain, instances)
		models.PrepareDesiredLRP(lrp)
		require.NoError(t, models.ValidateRequest(&bbsv1.DesireLRPRequest{DesiredLrp: lrp}))
		require.Equal(t, instances, lrp.GetInstances())
		require.Equal(t, "bench-desire-000007", lrp.GetProcessGuid())
		require.Contains(t, lrp.GetRoutes(), "cf-router")
	}
}
