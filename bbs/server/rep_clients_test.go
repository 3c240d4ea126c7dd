package server_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"drover.dev/bbs/server"
	"drover.dev/lib/devcerts"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	repv1 "drover.dev/proto/gen/drover/rep/v1"
)

// pingRep answers Ping with its cell id.
type pingRep struct {
	repv1.UnimplementedRepServiceServer
}

func (pingRep) Ping(context.Context, *repv1.PingRequest) (*repv1.PingResponse, error) {
	return &repv1.PingResponse{CellId: "cell-tls"}, nil
}

// issue makes a key pair signed by ca.
func issue(t *testing.T, ca *devcerts.CA, cn string) tls.Certificate {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(cn, []string{"127.0.0.1", "localhost"})
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return cert
}

func TestRepClientFactoryUsesMutualTLS(t *testing.T) {
	ca, err := devcerts.NewCA("test-ca")
	require.NoError(t, err)
	otherCA, err := devcerts.NewCA("other-ca")
	require.NoError(t, err)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{issue(t, ca, "rep")},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool(),
	})))
	repv1.RegisterRepServiceServer(srv, pingRep{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	cell := &modelsv1.CellPresence{CellId: "cell-tls", RepAddress: lis.Addr().String()}

	ping := func(f server.RepClientFactory) error {
		rep, err := f.RepClient(cell)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := rep.Ping(ctx, &repv1.PingRequest{})
		if err == nil {
			require.Equal(t, "cell-tls", resp.GetCellId())
		}
		return err
	}
	cases := []struct {
		name   string
		config *tls.Config
		ok     bool
	}{
		{"client certificate from the CA", &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: ca.Pool(), Certificates: []tls.Certificate{issue(t, ca, "bbs")}}, true},
		{"client certificate from another CA", &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: ca.Pool(), Certificates: []tls.Certificate{issue(t, otherCA, "bbs")}}, false},
		{"no client certificate", &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: ca.Pool()}, false},
		{"plaintext", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := server.NewRepClientFactory(tc.config)
			err := ping(f)
			if tc.ok {
				require.NoError(t, err)
				require.NoError(t, ping(f), "the cached connection works again")
			} else {
				require.Error(t, err)
			}
		})
	}

	_, err = server.NewRepClientFactory(nil).RepClient(&modelsv1.CellPresence{CellId: "no-address"})
	require.Error(t, err)
	_, err = server.NewRepClientFactory(nil).RepClient(nil)
	require.Error(t, err)
}
