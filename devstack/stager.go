package devstack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"drover.dev/fileserver/bundle"
	libconfig "drover.dev/lib/config"
	"drover.dev/lib/devcerts"
	"drover.dev/lib/tlsconfig"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
	stagerconfig "drover.dev/stager/config"
)

// StagerBinary is the stager's program.
var StagerBinary = Binary{Name: "stager", Package: "./stager/cmd/stager"}

// LifecycleBinaries are the builder and the launcher, static so that they run on every
// stack, packed into the lifecycle bundle the fileserver serves at LifecycleStatic.
var LifecycleBinaries = []Binary{
	{Name: "builder", Package: "./lifecycle/cmd/builder", Static: true},
	{Name: "launcher", Package: "./lifecycle/cmd/launcher", Static: true},
}

// LifecycleStatic is the lifecycle bundle's path in the fileserver's static directory.
const LifecycleStatic = stagerconfig.DefaultLifecyclePath

// StagerCommonName is the common name of the stager's certificate.
const StagerCommonName = "stager"

// StagerPorts are the stager's gRPC, callback (HTTPS) and debug ports.
type StagerPorts struct{ GRPC, Callback, Debug int }

// DefaultStagerPorts are the dev stack's stager ports.
var DefaultStagerPorts = StagerPorts{GRPC: 17020, Callback: 17021, Debug: 17022}

// DevDefaultStack is the stack a push without --stack stages on in the dev stack: busybox,
// which every cell has without building anything.
const DevDefaultStack = "busybox"

// The dev stack's staging task limits (the stager's defaults are for real cells).
const (
	DevStagingMemoryMB = 768
	DevStagingDiskMB   = 1024
)

// Buildpack is one of the tree's buildpacks (buildpacks/NAME) and the stack it is
// registered for.
type Buildpack struct{ Name, Stack string }

// TreeBuildpacks are the buildpacks the stack registers at its start, in order: the
// bookworm ones (when the stack has bookworm) and busybox's.
var TreeBuildpacks = []Buildpack{
	{"staticfile", "bookworm"}, {"nodejs", "bookworm"}, {"go", "bookworm"}, {"binary", "bookworm"},
	{"busybox", "busybox"},
}

// Stager is the stack's stager: a Service with its configuration.
type Stager struct {
	Service
	Config stagerconfig.Config `json:"config"`
	Certs  Certs               `json:"certs"`
}

// Address is the stager's gRPC address.
func (g *Stager) Address() string { return g.Config.ListenAddress }

// Start writes the configuration, starts the stager and waits until it is Healthy.
func (g *Stager) Start(ctx context.Context) error {
	return g.start(ctx, g.Config, ComponentStartTimeout, g.Healthy)
}

// Restart stops the stager if it runs and starts it again.
func (g *Stager) Restart(ctx context.Context) error {
	if err := g.Stop(ctx); err != nil {
		return err
	}
	return g.Start(ctx)
}

// Healthy reports whether the stager's gRPC health check answers SERVING and its debug
// server /healthz.
func (g *Stager) Healthy(ctx context.Context) error {
	tlsConf, err := g.Certs.ClientTLS()
	if err != nil {
		return err
	}
	if err := checkHealth(ctx, g.Address(), tlsConf); err != nil {
		return err
	}
	return checkHTTP(ctx, "http://"+g.Config.DebugAddress+"/healthz")
}

// Dial connects a StagerService client with the dev client (operator) certificate.
func (g *Stager) Dial() (stagerv1.StagerServiceClient, *grpc.ClientConn, error) {
	tlsConf, err := g.Certs.ClientTLS()
	if err != nil {
		return nil, nil, err
	}
	conn, err := grpc.NewClient(g.Address(), grpc.WithTransportCredentials(credentials.NewTLS(tlsConf)),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, nil, err
	}
	return stagerv1.NewStagerServiceClient(conn), conn, nil
}

// EnsureStager writes the stager's certificate (server and client use).
func (c Certs) EnsureStager() error {
	ca, err := devcerts.LoadOrCreateCA(c.Dir)
	if err != nil {
		return err
	}
	return devcerts.EnsureCert(ca, c.Dir, "stager", StagerCommonName, c.hostsFor("stager", componentHosts))
}

// Stager is the stager's certificate and key.
func (c Certs) Stager() tlsconfig.Files { return c.pair("stager") }

// AddStager describes the stager on ports, talking to the first BBS, the stack's
// database and fileserver (call it after AddBBS and AddFileserver). It stages for busybox
// and, when the stack has its image, bookworm; staging tasks get DevStagingEgressRules.
func (s *Stack) AddStager(ports StagerPorts, detached bool) *Stager {
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	cfg := stagerconfig.Default()
	cfg.ListenAddress = addr(ports.GRPC)
	cfg.CallbackListenAddress = addr(ports.Callback)
	cfg.CallbackURL = "https://" + addr(ports.Callback)
	cfg.DebugAddress = addr(ports.Debug)
	cfg.TLS = s.Certs.Stager()
	cfg.BBSAddress = s.BBS[0].GRPCAddress()
	cfg.DatabaseURL, cfg.DatabasePasswordFile = s.DatabaseURL, s.DatabasePasswordFile
	cfg.FileserverURL = s.Fileserver.URL()
	cfg.FileserverSigningKeyFile = s.Fileserver.Config.SigningKeyFile
	cfg.LifecyclePath = LifecycleStatic
	cfg.Stacks = nil
	for _, st := range stagerconfig.DefaultStacks() {
		if st.Name == DevDefaultStack || s.StackImages[st.Name] != "" {
			cfg.Stacks = append(cfg.Stacks, st)
		}
	}
	cfg.DefaultStack = DevDefaultStack
	cfg.StagingEgressRules = DevStagingEgressRules(resolvers())
	cfg.StagingTimeout = libconfig.Duration(10 * time.Minute)
	// Small cells: a staging task takes what a Node or Go build needs, not more.
	cfg.StagingMemoryMB, cfg.StagingDiskMB = DevStagingMemoryMB, DevStagingDiskMB
	g := &Stager{Config: cfg, Certs: s.Certs}
	s.describe(&g.Service, "stager", StagerBinary, detached)
	s.Fileserver.BundleSources[LifecycleStatic] = filepath.Join(s.BinDir, "lifecycle")
	s.Stager = g
	return g
}

// publicRanges are the IPv4 unicast ranges outside private, shared, loopback,
// link-local, multicast and reserved space: where the package registries are.
var publicRanges = []string{
	"1.0.0.0-9.255.255.255", "11.0.0.0-100.63.255.255", "100.128.0.0-126.255.255.255",
	"128.0.0.0-169.253.255.255", "169.255.0.0-172.15.255.255", "172.32.0.0-192.167.255.255",
	"192.169.0.0-223.255.255.255",
}

// DevStagingEgressRules let a staging task resolve names through resolvers (DNS, udp
// and tcp 53) and reach public addresses on tcp 80 and 443 (Debian's mirror, the npm
// registry, the Go module proxy), and nothing else: no private address but the
// resolvers, so no other host of this network.
func DevStagingEgressRules(resolvers []string) []*modelsv1.EgressRule {
	var rules []*modelsv1.EgressRule
	if len(resolvers) > 0 {
		for _, proto := range []string{"udp", "tcp"} {
			rules = append(rules, &modelsv1.EgressRule{Protocol: proto, Destinations: resolvers, Ports: []uint32{53}})
		}
	}
	return append(rules, &modelsv1.EgressRule{Protocol: "tcp", Destinations: publicRanges, Ports: []uint32{80, 443}})
}

// resolvers are the IPv4 nameservers of this machine's /etc/resolv.conf.
func resolvers() []string {
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return nil
	}
	return parseResolvers(data)
}

// startStager starts the stager and registers the tree's buildpacks for the stacks it
// serves (RegisterTreeBuildpacks).
func (s *Stack) startStager(ctx context.Context, logf func(string, ...any)) error {
	g := s.Stager
	if g == nil {
		return nil
	}
	logf("starting stager (grpc %s, callbacks %s, debug %s)", g.Config.ListenAddress, g.Config.CallbackListenAddress, g.Config.DebugAddress)
	if err := g.Start(ctx); err != nil {
		return err
	}
	return s.RegisterTreeBuildpacks(ctx, logf)
}

// RegisterTreeBuildpacks registers (or updates, when their archive changed) the tree's
// buildpacks of the stacks the stager serves, in TreeBuildpacks order.
func (s *Stack) RegisterTreeBuildpacks(ctx context.Context, logf func(string, ...any)) error {
	client, conn, err := s.Stager.Dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	served := map[string]bool{}
	for _, st := range s.Stager.Config.Stacks {
		served[st.Name] = true
	}
	for _, bp := range TreeBuildpacks {
		if !served[bp.Stack] {
			continue
		}
		archive, err := TarGzDir(filepath.Join(s.Root, "buildpacks", bp.Name))
		if err != nil {
			return fmt.Errorf("buildpack %s: %w", bp.Name, err)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = client.UpdateBuildpack(cctx, &stagerv1.UpdateBuildpackRequest{Name: bp.Name, Stack: bp.Stack, Archive: archive, Filename: bp.Name + ".tgz"})
		if err != nil {
			_, err = client.CreateBuildpack(cctx, &stagerv1.CreateBuildpackRequest{Name: bp.Name, Stack: bp.Stack, Archive: archive, Filename: bp.Name + ".tgz"})
		}
		cancel()
		if err != nil {
			return fmt.Errorf("registering buildpack %s for %s: %w", bp.Name, bp.Stack, err)
		}
		logf("registered buildpack %s for stack %s", bp.Name, bp.Stack)
	}
	return nil
}

// TarGzDir packs the directory dir as a deterministic tar.gz (fileserver/bundle) in
// memory: a buildpack archive.
func TarGzDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	err := bundle.Pack(dir, &buf)
	return buf.Bytes(), err
}
