package store_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"drover.dev/bbs/models"
	"drover.dev/bbs/store"
	"drover.dev/bbs/store/storetest"
)

// TestValuesPostgresRefusesAreInvalidRequests sends the store values that validation
// would refuse first (it is bypassed here): Postgres refuses them, and the store answers
// InvalidRequest, not an internal error, and changes nothing.
func TestValuesPostgresRefusesAreInvalidRequests(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := testContext(t)

	// Random text does not compress, so its index entry is over B-tree's limit (54000).
	random := make([]byte, 8*1024)
	_, err := rand.Read(random)
	require.NoError(t, err)
	tooBigForAnIndex := hex.EncodeToString(random)

	tests := []struct {
		name    string
		call    func() error
		mention string
	}{
		{"NUL in a key (22021)", func() error { return s.UpsertDomain(ctx, "cf\x00apps", 0) }, "0x00"},
		{"index entry too big (54000)", func() error { return s.UpsertDomain(ctx, tooBigForAnIndex, 0) }, "index row"},
		{"NUL in a text column (22021)", func() error { return s.CordonCell(ctx, "cell-1", "disk\x00full") }, "0x00"},
		{"NUL in a read filter (22021)", func() error {
			_, err := s.ListDesiredLRPs(ctx, store.DesiredLRPFilter{Domain: "cf\x00apps"})
			return err
		}, "0x00"},
		{"NUL in a lookup (22021)", func() error { _, err := s.GetDesiredLRP(ctx, "guid\x00"); return err }, "0x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			requireErrorType(t, err, models.ErrTypeInvalidRequest)
			require.Contains(t, err.Error(), tt.mention)
		})
	}

	domains, err := s.ListFreshDomains(ctx)
	require.NoError(t, err)
	require.Empty(t, domains, "no domain was stored")
	events, err := s.EventsAfter(ctx, 0, 0)
	require.NoError(t, err)
	require.Empty(t, events, "no event was appended")
}
