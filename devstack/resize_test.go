package devstack

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// describedDevStack is a dev stack with one cell described on the default ports, not
// started.
func describedDevStack(t *testing.T) *Stack {
	home := t.TempDir()
	s := &Stack{Home: home, BinDir: home, OwnPostgres: true, Certs: Certs{Dir: home}}
	s.AddBBS(DefaultPorts, "passphrase", true)
	s.AddRegistries(DefaultRegistryPorts, true)
	s.AddCells([]CellLayout{devCellLayout(1, DefaultRepPort)}, DefaultAuctioneerPorts, true)
	s.AddConverger(DefaultConvergerDebugPort, DevConvergeInterval, true)
	s.NATS = &NATS{URL: "nats://127.0.0.1:4222", Own: true}
	s.AddRouting(DefaultRouteEmitterPorts, DefaultRouterPorts, DevRegisterInterval, true)
	s.AddFileserver(DefaultFileserverPorts, true)
	return s
}

func TestConflictsNameEveryFlagThatCannotApply(t *testing.T) {
	s := describedDevStack(t)
	require.Empty(t, s.conflicts(Options{}), "nothing given, nothing refused")
	require.Empty(t, s.conflicts(Options{Cells: 3}), "cells resize")
	same := Options{Replicas: 1, Ports: DefaultPorts, RepPort: DefaultRepPort, AuctioneerPorts: DefaultAuctioneerPorts,
		ConvergerDebugPort: DefaultConvergerDebugPort, RouteEmitterPorts: DefaultRouteEmitterPorts, RouterPorts: DefaultRouterPorts,
		FileserverPorts: DefaultFileserverPorts, RegistryPorts: DefaultRegistryPorts}
	require.Empty(t, s.conflicts(same), "what runs is no conflict")

	tests := []struct {
		name  string
		given Options
		want  string
	}{
		{"replicas", Options{Replicas: 2}, "-replicas 2 (it runs with 1)"},
		{"grpc-port", Options{Ports: Ports{GRPC: 7000}}, "-grpc-port 7000 (it runs with 8889)"},
		{"http-port", Options{Ports: Ports{HTTP: 7000}}, "-http-port 7000 (it runs with 8888)"},
		{"debug-port", Options{Ports: Ports{Debug: 7000}}, "-debug-port 7000 (it runs with 8890)"},
		{"database-url", Options{DatabaseURL: "postgres://db.example/x"}, "-database-url (it runs with the private Postgres)"},
		{"rep-port", Options{RepPort: 7000}, "-rep-port 7000 (it runs with 1800)"},
		{"auctioneer-port", Options{AuctioneerPorts: AuctioneerPorts{GRPC: 7000}}, "-auctioneer-port 7000 (it runs with 9016)"},
		{"auctioneer-debug-port", Options{AuctioneerPorts: AuctioneerPorts{Debug: 7000}}, "-auctioneer-debug-port 7000 (it runs with 9017)"},
		{"converger-debug-port", Options{ConvergerDebugPort: 7000}, "-converger-debug-port 7000 (it runs with 9020)"},
		{"router-port", Options{RouterPorts: RouterPorts{HTTP: 7000}}, "-router-port 7000 (it runs with 8081)"},
		{"router-admin-port", Options{RouterPorts: RouterPorts{Admin: 7000}}, "-router-admin-port 7000 (it runs with 8082)"},
		{"route-emitter-port", Options{RouteEmitterPorts: RouteEmitterPorts{GRPC: 7000}}, "-route-emitter-port 7000 (it runs with 17010)"},
		{"route-emitter-debug-port", Options{RouteEmitterPorts: RouteEmitterPorts{Debug: 7000}}, "-route-emitter-debug-port 7000 (it runs with 17009)"},
		{"fileserver-port", Options{FileserverPorts: FileserverPorts{HTTP: 7000}}, "-fileserver-port 7000 (it runs with 8080)"},
		{"fileserver-debug-port", Options{FileserverPorts: FileserverPorts{Debug: 7000}}, "-fileserver-debug-port 7000 (it runs with 17005)"},
		{"registry-port", Options{RegistryPorts: RegistryPorts{Plain: 7000}}, "-registry-port 7000 (it runs with 5080)"},
		{"registry-tls-port", Options{RegistryPorts: RegistryPorts{TLS: 7000}}, "-registry-tls-port 7000 (it runs with 5443)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, []string{tt.want}, s.conflicts(tt.given))
		})
	}

	err := refuse(s.conflicts(Options{Replicas: 3, RepPort: 7000}))
	require.ErrorIs(t, err, ErrRunningStack)
	require.EqualError(t, err, "-replicas 3 (it runs with 1), -rep-port 7000 (it runs with 1800) cannot apply to a running stack: run `make down` first")
	require.NoError(t, refuse(nil))
}

func TestConflictsOfAStackWithoutCells(t *testing.T) {
	home := t.TempDir()
	s := &Stack{Home: home, BinDir: home, Certs: Certs{Dir: home}, DatabaseURL: "postgres://db.example/x"}
	s.AddBBS(DefaultPorts, "passphrase", true)
	require.Equal(t, []string{"-rep-port 1800 (it runs with none)", "-router-port 8081 (it runs with none)"},
		s.conflicts(Options{RepPort: DefaultRepPort, RouterPorts: RouterPorts{HTTP: DefaultRouterPorts.HTTP}}))
	require.Empty(t, s.conflicts(Options{DatabaseURL: "postgres://db.example/x"}), "the same database")
	require.Equal(t, []string{"-database-url (it runs with another database)"}, s.conflicts(Options{DatabaseURL: "postgres://other/x"}))
}
