package network

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUniquePorts(t *testing.T) {
	tests := []struct {
		name string
		in   []uint32
		want []uint32
	}{
		{"nil", nil, []uint32{}},
		{"distinct keep order", []uint32{8080, 22, 9000}, []uint32{8080, 22, 9000}},
		{"duplicates dropped", []uint32{8080, 8080, 22, 8080, 22}, []uint32{8080, 22}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, uniquePorts(tt.in))
		})
	}
}

func TestValidateContainerPorts(t *testing.T) {
	tests := []struct {
		name    string
		in      []uint32
		wantErr string
	}{
		{"none", nil, ""},
		{"valid", []uint32{1, 8080, 65535}, ""},
		{"zero", []uint32{8080, 0}, "container port 0"},
		{"too big", []uint32{65536}, "container port 65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateContainerPorts(tt.in)
			if tt.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tt.wantErr)
			}
		})
	}
}

func TestPortAllocator(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, a *portAllocator)
	}{
		{"distinct ports within range", func(t *testing.T, a *portAllocator) {
			p1, err := a.allocate("a", 2)
			require.NoError(t, err)
			p2, err := a.allocate("b", 2)
			require.NoError(t, err)
			assert.Equal(t, []uint32{100, 101}, p1)
			assert.Equal(t, []uint32{102, 103}, p2)
			assert.Equal(t, 0, a.free())
		}},
		{"exhaustion allocates nothing", func(t *testing.T, a *portAllocator) {
			_, err := a.allocate("a", 3)
			require.NoError(t, err)
			_, err = a.allocate("b", 2)
			assert.True(t, errors.Is(err, ErrPortsExhausted), "got %v", err)
			assert.ErrorContains(t, err, "2 wanted, 1 of [100,103] free")
			assert.Empty(t, a.ownedBy("b"))
			assert.Equal(t, 1, a.free())
		}},
		{"released ports are reused", func(t *testing.T, a *portAllocator) {
			_, err := a.allocate("a", 2)
			require.NoError(t, err)
			_, err = a.allocate("b", 2)
			require.NoError(t, err)
			a.release("a")
			p, err := a.allocate("c", 2)
			require.NoError(t, err)
			assert.Equal(t, []uint32{100, 101}, p)
		}},
		{"rotates past recently freed ports", func(t *testing.T, a *portAllocator) {
			_, err := a.allocate("a", 1)
			require.NoError(t, err)
			a.release("a")
			p, err := a.allocate("b", 1)
			require.NoError(t, err)
			assert.Equal(t, []uint32{101}, p)
		}},
		{"reserve blocks ports and detects conflicts", func(t *testing.T, a *portAllocator) {
			require.NoError(t, a.reserve("a", []uint32{100, 102, 9999}))
			assert.Equal(t, []uint32{100, 102}, a.ownedBy("a"))
			assert.ErrorContains(t, a.reserve("b", []uint32{102}), "host port 102 is recorded for both")
			p, err := a.allocate("c", 2)
			require.NoError(t, err)
			assert.Equal(t, []uint32{101, 103}, p)
		}},
		{"zero ports is fine", func(t *testing.T, a *portAllocator) {
			p, err := a.allocate("a", 0)
			require.NoError(t, err)
			assert.Empty(t, p)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, newPortAllocator(100, 103))
		})
	}
}
