// Package authztest gives tests of guarded gRPC servers a dev CA and a client
// certificate for any common name, so that a table can call every RPC as every
// identity over real mTLS.
package authztest

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"drover.dev/lib/authz"
	"drover.dev/lib/devcerts"
	"drover.dev/lib/grpcserver"
	"drover.dev/lib/tlsconfig"
)

// CA is a dev CA in a test's temporary directory.
type CA struct {
	t   testing.TB
	dir string
	ca  *devcerts.CA
}

// NewCA writes a dev CA (and its bbs and client pairs, devcerts.WriteDevCerts).
func NewCA(t testing.TB) *CA {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, devcerts.WriteDevCerts(dir))
	ca, err := devcerts.LoadOrCreateCA(dir)
	require.NoError(t, err)
	return &CA{t: t, dir: dir, ca: ca}
}

// Files issues (once) a certificate for commonName valid for 127.0.0.1 and returns its files.
func (c *CA) Files(commonName string) tlsconfig.Files {
	c.t.Helper()
	name := "cn-" + hex.EncodeToString([]byte(commonName)) // any common name, even "" or "cell:"
	require.NoError(c.t, devcerts.EnsureCert(c.ca, c.dir, name, commonName, []string{"127.0.0.1"}))
	return tlsconfig.Files{CAFile: filepath.Join(c.dir, "ca.crt"), CertFile: filepath.Join(c.dir, name+".crt"), KeyFile: filepath.Join(c.dir, name+".key")}
}

// Server is a server configuration (requiring client certificates of this CA) whose
// own certificate has commonName.
func (c *CA) Server(commonName string) *tls.Config {
	c.t.Helper()
	cfg, err := c.Files(commonName).Server()
	require.NoError(c.t, err)
	return cfg
}

// Client is a client configuration presenting a certificate with commonName.
func (c *CA) Client(commonName string) *tls.Config {
	c.t.Helper()
	cfg, err := c.Files(commonName).Client()
	require.NoError(c.t, err)
	return cfg
}

// Caller is an identity a table test calls as: a name for messages and the common
// name of its certificate.
type Caller struct{ Name, CommonName string }

// Callers are the dev stack's identities, two cells, a cell certificate with an empty
// id and a certificate without a role.
var Callers = []Caller{
	{"operator", "drover-client"}, {"bbs", "bbs"}, {"auctioneer", "auctioneer"}, {"converger", "converger"},
	{"route-emitter", "route-emitter"}, {"cell-1", "cell:cell-1"}, {"cell-2", "cell:cell-2"},
	{"stager", "stager"}, {"empty-cell", "cell:"}, {"stranger", "stranger"},
}

// Everyone are the names of the Callers every authenticated caller rule admits.
var Everyone = []string{"operator", "bbs", "auctioneer", "converger", "route-emitter", "cell-1", "cell-2", "stager"}

// Serve serves what register registers on a lib/grpcserver server (health and
// reflection included) over mTLS on a loopback port, behind a guard with policy and
// the default names, and returns its address.
func (c *CA) Serve(policy authz.Policy, register func(*grpc.Server)) string {
	c.t.Helper()
	guard, err := authz.NewGuard(authz.GuardOptions{Names: authz.DefaultNames(), Policy: policy})
	require.NoError(c.t, err)
	srv, health := grpcserver.NewServer(c.Server("server"),
		grpc.ChainUnaryInterceptor(guard.UnaryInterceptor()), grpc.ChainStreamInterceptor(guard.StreamInterceptor()))
	register(srv)
	grpcserver.SetServing(health, srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(c.t, err)
	go func() { _ = srv.Serve(lis) }()
	c.t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// Dial connects to addr presenting a certificate with commonName.
func (c *CA) Dial(addr, commonName string) *grpc.ClientConn {
	c.t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(c.Client(commonName))))
	require.NoError(c.t, err)
	c.t.Cleanup(func() { conn.Close() })
	return conn
}

// RequireAllowed calls call as every one of Callers: those named in allowed must not
// get PermissionDenied, every other one must, with a message naming method.
func (c *CA) RequireAllowed(t testing.TB, addr, method string, allowed []string, call func(ctx context.Context, conn *grpc.ClientConn) error) {
	t.Helper()
	for _, caller := range Callers {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := call(ctx, c.Dial(addr, caller.CommonName))
		cancel()
		if slices.Contains(allowed, caller.Name) {
			require.NotEqual(t, codes.PermissionDenied, status.Code(err), "%s should be allowed to call %s: %v", caller.Name, method, err)
			continue
		}
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%s should be refused %s, got %v", caller.Name, method, err)
		require.ErrorContains(t, err, method)
	}
}
