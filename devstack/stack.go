package devstack

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"drover.dev/bbs/client"
	bbsconfig "drover.dev/bbs/config"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// Stack is a set of drover processes sharing a home directory, certificates and a
// database.
type Stack struct {
	Root        string `json:"root"`
	Home        string `json:"home"`
	BinDir      string `json:"bin_dir"`
	DatabaseURL string `json:"database_url"`
	// DatabasePasswordFile holds the password for DatabaseURL (the BBS's
	// database_password_file); empty when the URL needs none of its own.
	DatabasePasswordFile string `json:"database_password_file,omitempty"`
	// OwnPostgres is true when the stack runs the private Postgres of Home and stops it
	// on Down.
	OwnPostgres bool   `json:"own_postgres"`
	Certs       Certs  `json:"certs"`
	BBS         []*BBS `json:"bbs"`
	// Containerd is the containerd the cells use; empty when the stack has no cells.
	Containerd Containerd `json:"containerd"`
	// Auctioneer is nil when the stack has no cells.
	Auctioneer *Auctioneer `json:"auctioneer,omitempty"`
	Reps       []*Rep      `json:"reps,omitempty"`
	// Converger is nil when the stack runs none (a test stack that did not ask for one,
	// or a stack without cells).
	Converger *Converger `json:"converger,omitempty"`
	// NATS, RouteEmitter and Router are the routing side; nil when the stack runs none
	// (a stack without cells, or a test stack that did not ask for routing).
	NATS         *NATS         `json:"nats,omitempty"`
	RouteEmitter *RouteEmitter `json:"route_emitter,omitempty"`
	Router       *Router       `json:"router,omitempty"`
	// Fileserver serves builder bundles, app packages and droplets; nil when the stack
	// runs none (a stack without cells, or a test stack that did not ask for one).
	Fileserver *Fileserver `json:"fileserver,omitempty"`
	// Registry is the stack's private OCI registries (the dev stack with cells, a test
	// stack that asks for them); nil when it runs none.
	Registry *Registries `json:"registry,omitempty"`
	// Stager stages apps with buildpacks; nil when the stack runs none.
	Stager *Stager `json:"stager,omitempty"`
	// StackImages are the OCI image tarballs of the stacks built by scripts/stack.sh
	// (stack name → file) that every cell preloads besides busybox.
	StackImages map[string]string `json:"stack_images,omitempty"`
	// Hosts is the test network of a multi-host stack (PlaceOnHosts); nil on one host.
	Hosts *HostNetwork `json:"hosts,omitempty"` // multihost
}

// Ports are the BBS's listening ports; replica i listens on each plus i*PortStride.
type Ports struct {
	GRPC, HTTP, Debug int
}

// DefaultPorts are the dev stack's fixed ports.
var DefaultPorts = Ports{GRPC: 8889, HTTP: 8888, Debug: 8890}

// PortStride separates the ports of successive dev stack replicas.
const PortStride = 10

// encryptionKeyLabel labels the dev stack's single encryption key.
const encryptionKeyLabel = "dev"

// stateFile is the file in Home describing a running dev stack.
const stateFile = "stack.json"

// AddBBS describes the next BBS replica (bbs-0, bbs-1, ...) on ports, encrypting with
// passphrase, and returns it. A detached one outlives the process that starts it (the
// dev stack); an attached one dies with it (a test stack).
func (s *Stack) AddBBS(ports Ports, passphrase string, detached bool) *BBS {
	name := "bbs-" + strconv.Itoa(len(s.BBS))
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	cfg := bbsconfig.Default()
	cfg.GRPCAddress = addr(ports.GRPC)
	cfg.HTTPAddress = addr(ports.HTTP)
	cfg.DebugAddress = addr(ports.Debug)
	cfg.DatabaseURL = s.DatabaseURL
	cfg.DatabasePasswordFile = s.DatabasePasswordFile
	cfg.TLS = s.Certs.Server()
	cfg.EncryptionKeys = map[string]string{encryptionKeyLabel: passphrase}
	cfg.ActiveKeyLabel = encryptionKeyLabel
	b := &BBS{Certs: s.Certs, Config: cfg}
	s.describe(&b.Service, name, BBSBinary, detached)
	s.BBS = append(s.BBS, b)
	return b
}

// Dial connects a BBS client to replica i with the dev client certificate.
func (s *Stack) Dial(i int) (*client.Client, error) {
	if i < 0 || i >= len(s.BBS) {
		return nil, fmt.Errorf("no bbs replica %d", i)
	}
	tlsConf, err := s.Certs.ClientTLS()
	if err != nil {
		return nil, err
	}
	return client.New(s.BBS[i].GRPCAddress(), tlsConf)
}

// HTTPClient returns an HTTPS client that trusts the dev CA and presents the dev client
// certificate. It has no overall timeout, so that it can read event streams.
func (s *Stack) HTTPClient() (*http.Client, error) {
	tlsConf, err := s.Certs.ClientTLS()
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
	}}, nil
}

// ClientTLS returns the client side mTLS configuration of the stack's certificates.
func (s *Stack) ClientTLS() (*tls.Config, error) { return s.Certs.ClientTLS() }

// Stop stops the route-emitter, the router, the converger, the reps, the auctioneer,
// every BBS and the registries in that order (SIGTERM, then SIGKILL after StopGrace),
// then removes what the cells left on the host (CleanCells) and shuts a test stack's
// embedded NATS down, and returns every error.
func (s *Stack) Stop(ctx context.Context) error {
	var errs []error
	if s.Stager != nil {
		errs = append(errs, s.Stager.Stop(ctx))
	}
	if s.RouteEmitter != nil {
		errs = append(errs, s.RouteEmitter.Stop(ctx))
	}
	if s.Fileserver != nil {
		errs = append(errs, s.Fileserver.Stop(ctx))
	}
	if s.Router != nil {
		errs = append(errs, s.Router.Stop(ctx))
	}
	if s.Converger != nil {
		errs = append(errs, s.Converger.Stop(ctx))
	}
	for _, r := range s.Reps {
		errs = append(errs, r.Stop(ctx))
	}
	if s.Auctioneer != nil {
		errs = append(errs, s.Auctioneer.Stop(ctx))
	}
	for _, b := range s.BBS {
		errs = append(errs, b.Stop(ctx))
	}
	if s.Registry != nil {
		for _, r := range s.Registry.All() {
			errs = append(errs, r.Stop(ctx))
		}
	}
	errs = append(errs, s.CleanCells(ctx))
	if s.NATS != nil {
		s.NATS.Shutdown()
	}
	return errors.Join(errs...)
}

// Services lists every process of the stack.
func (s *Stack) Services() []*Service {
	var out []*Service
	for _, b := range s.BBS {
		out = append(out, &b.Service)
	}
	if s.Auctioneer != nil {
		out = append(out, &s.Auctioneer.Service)
	}
	for _, r := range s.Reps {
		out = append(out, &r.Service)
	}
	if s.Converger != nil {
		out = append(out, &s.Converger.Service)
	}
	if s.Router != nil {
		out = append(out, &s.Router.Service)
	}
	if s.RouteEmitter != nil {
		out = append(out, &s.RouteEmitter.Service)
	}
	if s.Fileserver != nil {
		out = append(out, &s.Fileserver.Service)
	}
	if s.Registry != nil {
		for _, r := range s.Registry.All() {
			out = append(out, &r.Service)
		}
	}
	if s.Stager != nil {
		out = append(out, &s.Stager.Service)
	}
	return out
}

// hasCredentials reports whether the stack's NATS and private Postgres are reached with
// credentials; a stack brought up by an older version without them is brought up again.
func (s *Stack) hasCredentials() bool {
	return (s.NATS == nil || len(s.NATS.PasswordFiles) > 0) && (!s.OwnPostgres || s.DatabasePasswordFile != "")
}

// Rep returns the rep of cellID, or nil.
func (s *Stack) Rep(cellID string) *Rep {
	for _, r := range s.Reps {
		if r.CellID() == cellID {
			return r
		}
	}
	return nil
}

// saveState writes the stack's description to Home so another process can Load it.
func (s *Stack) saveState() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode stack state: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.Home, stateFile), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write stack state: %w", err)
	}
	return nil
}

// Load reads the state of the dev stack in home. It returns fs.ErrNotExist (wrapped)
// when no stack was brought up there.
func Load(home string) (*Stack, error) {
	data, err := os.ReadFile(filepath.Join(home, stateFile))
	if err != nil {
		return nil, fmt.Errorf("load stack state: %w", err)
	}
	s := &Stack{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("load stack state %s: %w", filepath.Join(home, stateFile), err)
	}
	return s, nil
}

// removeState forgets the stack's description.
func (s *Stack) removeState() error {
	err := os.Remove(filepath.Join(s.Home, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// WaitForCells waits until every rep's cell shows in the BBS's ListCells, at most timeout.
func (s *Stack) WaitForCells(ctx context.Context, timeout time.Duration) error {
	c, err := s.Dial(0)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		missing, err := s.missingCells(ctx, c)
		if err == nil && len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("cells %v are not registered", missing)
			}
			return fmt.Errorf("wait for cells: %w (%v)", ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}

// missingCells lists the stack's cells that ListCells does not show.
func (s *Stack) missingCells(ctx context.Context, c *client.Client) ([]string, error) {
	resp, err := c.ListCells(ctx, &bbsv1.ListCellsRequest{})
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	for _, cell := range resp.GetCells() {
		present[cell.GetCellId()] = true
	}
	var missing []string
	for _, r := range s.Reps {
		if !present[r.CellID()] {
			missing = append(missing, r.CellID())
		}
	}
	return missing, nil
}
