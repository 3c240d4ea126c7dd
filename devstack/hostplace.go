package devstack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// command is the program and arguments that start the service: the binary itself, or,
// for a service placed on a test host (Netns), nsenter into the host's namespace first.
func (s *Service) command(args []string) (string, []string) {
	if s.Netns == "" {
		return s.Binary, args
	}
	return nsenterPath, append([]string{"--net=" + NetnsPath(s.Netns), "--", s.Binary}, args...)
}

// hostOf says which test host each service of a stack runs on: the reps on their
// cell's host, NATS and the router on the router host, everything else on control.
func (s *Stack) hostOf(svc *Service) string {
	for _, r := range s.Reps {
		if svc == &r.Service {
			return r.CellID()
		}
	}
	if s.Router != nil && svc == &s.Router.Service {
		return HostRouter
	}
	return HostControl
}

// PlaceOnHosts moves a stack described for one machine (every address 127.0.0.1, each
// listening port distinct) onto the test network n: each service is started in its
// host's namespace (hostOf) and listens on its host's address; every address another
// process dials (the BBS, the auctioneer, the NATS server, the registries...) is
// rewritten to where that listener now is; each rep publishes its instances' host ports
// on its cell's address; the certificates name the hosts' addresses (Certs.SANs). Call
// it after every Add... (with s.NATS set, its URL on the router's address) and before
// PrepareFiles. It fails, naming them, when a configuration still holds 127.0.0.1 or a
// service has no host.
func (s *Stack) PlaceOnHosts(n *HostNetwork) error {
	s.Hosts = n
	moved := map[string]string{} // 127.0.0.1:port → host-ip:port
	ipOf := map[*Service]string{}
	for _, svc := range s.Services() {
		h := n.Host(s.hostOf(svc))
		if h == nil {
			return fmt.Errorf("hosts: no test host %q for %s", s.hostOf(svc), svc.Name)
		}
		svc.Netns, ipOf[svc] = h.Netns, h.IP
		for _, addr := range s.listenAddresses(svc) {
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				return fmt.Errorf("hosts: %s listens on %q: %w", svc.Name, addr, err)
			}
			moved[addr] = net.JoinHostPort(h.IP, port)
		}
	}
	for _, r := range s.Reps {
		r.Config.Executor.ExternalIP = ipOf[&r.Service]
	}
	s.Certs.SANs = map[string][]string{"bbs": {n.Host(HostControl).IP}}
	for _, name := range []string{"auctioneer", "converger", "route-emitter", "registry", "stager"} {
		s.Certs.SANs[name] = []string{n.Host(HostControl).IP}
	}
	for _, r := range s.Reps {
		s.Certs.SANs["rep-"+r.CellID()] = []string{ipOf[&r.Service]}
	}
	var errs []string
	for _, c := range s.configs() {
		if err := rewriteAddresses(c.config, moved, "unix:"+filepath.Join(c.dir, "debug-admin.sock")); err != nil {
			errs = append(errs, c.name+": "+err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("hosts: %s", strings.Join(errs, "; "))
	}
	return nil
}

// namedConfig is one service's configuration (a pointer to it).
type namedConfig struct {
	name, dir string
	config    any
}

// configs lists a pointer to every service's configuration.
func (s *Stack) configs() []namedConfig {
	var out []namedConfig
	for _, b := range s.BBS {
		out = append(out, namedConfig{b.Name, b.Dir, &b.Config})
	}
	if a := s.Auctioneer; a != nil {
		out = append(out, namedConfig{a.Name, a.Dir, &a.Config})
	}
	for _, r := range s.Reps {
		out = append(out, namedConfig{r.Name, r.Dir, &r.Config})
	}
	if c := s.Converger; c != nil {
		out = append(out, namedConfig{c.Name, c.Dir, &c.Config})
	}
	if e := s.RouteEmitter; e != nil {
		out = append(out, namedConfig{e.Name, e.Dir, &e.Config})
	}
	if r := s.Router; r != nil {
		out = append(out, namedConfig{r.Name, r.Dir, &r.Config})
	}
	if f := s.Fileserver; f != nil {
		out = append(out, namedConfig{f.Name, f.Dir, &f.Config})
	}
	if g := s.Stager; g != nil {
		out = append(out, namedConfig{g.Name, g.Dir, &g.Config})
	}
	if s.Registry != nil {
		for _, r := range s.Registry.All() {
			out = append(out, namedConfig{r.Name, r.Dir, &r.Config})
		}
	}
	return out
}

// listenAddresses are the addresses svc listens on.
func (s *Stack) listenAddresses(svc *Service) []string {
	for _, b := range s.BBS {
		if svc == &b.Service {
			return []string{b.Config.GRPCAddress, b.Config.HTTPAddress, b.Config.DebugAddress}
		}
	}
	for _, r := range s.Reps {
		if svc == &r.Service {
			return []string{r.Config.ListenAddress, r.Config.DebugAddress}
		}
	}
	switch {
	case s.Auctioneer != nil && svc == &s.Auctioneer.Service:
		return []string{s.Auctioneer.Config.ListenAddress, s.Auctioneer.Config.DebugAddress}
	case s.Converger != nil && svc == &s.Converger.Service:
		return []string{s.Converger.Config.DebugAddress}
	case s.RouteEmitter != nil && svc == &s.RouteEmitter.Service:
		return []string{s.RouteEmitter.Config.ListenAddress, s.RouteEmitter.Config.DebugAddress}
	case s.Router != nil && svc == &s.Router.Service:
		return []string{s.Router.Config.ListenAddress, s.Router.Config.AdminAddress}
	case s.Fileserver != nil && svc == &s.Fileserver.Service:
		return []string{s.Fileserver.Config.ServerAddress, s.Fileserver.Config.DebugAddress}
	case s.Stager != nil && svc == &s.Stager.Service:
		return []string{s.Stager.Config.ListenAddress, s.Stager.Config.CallbackListenAddress, s.Stager.Config.DebugAddress}
	}
	if s.Registry != nil {
		for _, r := range s.Registry.All() {
			if svc == &r.Service {
				return []string{r.Config.HTTP.Addr}
			}
		}
	}
	return nil
}

// loopbackAddress matches 127.0.0.1 with an optional port (not 127.0.0.10).
var loopbackAddress = regexp.MustCompile(`127\.0\.0\.1\b(:[0-9]+)?`)

// rewriteAddresses replaces, in the JSON form of *config (a pointer), every
// 127.0.0.1:port of moved by its new address, and fails, listing them, if any
// 127.0.0.1 is left. A debug server no longer on loopback serves pprof and /log-level
// elsewhere: an empty debug_admin_address becomes adminAddress (a unix socket).
func rewriteAddresses(config any, moved map[string]string, adminAddress string) error {
	data, err := json.Marshal(config)
	if err != nil {
		return err
	}
	var left []string
	out := loopbackAddress.ReplaceAllStringFunc(string(data), func(addr string) string {
		if to, ok := moved[addr]; ok {
			return to
		}
		left = append(left, addr)
		return addr
	})
	if len(left) > 0 {
		sort.Strings(left)
		return fmt.Errorf("%s is not the address of any listener on the test network", strings.Join(left, ", "))
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(out), &fields); err == nil {
		if v, ok := fields["debug_admin_address"]; ok && v == "" {
			fields["debug_admin_address"] = adminAddress
			data, err := json.Marshal(fields)
			if err != nil {
				return err
			}
			out = string(data)
		}
	}
	return decodeInto(config, []byte(out))
}

// ConfigLoopbacks lists, one line each, the written configuration files of the stack's
// services that mention 127.0.0.1 (a multi-host stack has none).
func ConfigLoopbacks(s *Stack) ([]string, error) {
	var out []string
	for _, svc := range s.Services() {
		data, err := readFileIfExists(svc.ConfigPath())
		if err != nil {
			return nil, err
		}
		if m := loopbackAddress.FindAllString(string(data), -1); len(m) > 0 {
			out = append(out, fmt.Sprintf("%s: %s", svc.ConfigPath(), strings.Join(m, ", ")))
		}
	}
	return out, nil
}

// decodeInto replaces *config (a pointer) with the decoding of data.
func decodeInto(config any, data []byte) error {
	v := reflect.ValueOf(config)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("decode config: want a non-nil pointer, got %T", config)
	}
	fresh := reflect.New(v.Elem().Type())
	if err := json.Unmarshal(data, fresh.Interface()); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	v.Elem().Set(fresh.Elem())
	return nil
}

// readFileIfExists reads path; a missing file reads as nothing.
func readFileIfExists(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}
