package natstest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"drover.dev/devstack/natsuser"
)

func TestEmbeddedServerEnforcesThePolicy(t *testing.T) {
	s := New(t)
	RequirePolicy(t, s.URL(), s.Password)
}

// TestUnauthenticatedPublishIsRefused: without credentials nothing reaches a router,
// also not after a restart (the users stay).
func TestUnauthenticatedPublishIsRefused(t *testing.T) {
	s := New(t)
	require.NoError(t, s.Restart())
	_, err := nats.Connect(s.URL())
	require.ErrorIs(t, err, nats.ErrAuthorization)
	nc, err := s.Connect(natsuser.Router)
	require.NoError(t, err, "the same password after a restart")
	nc.Close()
	require.Empty(t, s.Password("nobody"))
	require.Nil(t, Permissions("nobody"))
}
