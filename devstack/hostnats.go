package devstack

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"drover.dev/devstack/natsuser"
)

// NATSServerBinary is Debian's nats-server, which a multi-host stack runs on its router
// host (scripts/nats.sh only serves 127.0.0.1).
const NATSServerBinary = "/usr/sbin/nats-server"

// HostNATS is the nats-server of a multi-host stack on the router host: a Service whose
// configuration (JSON, which nats-server reads as its configuration format) listens on
// the router's address with the users and permissions of scripts/nats.sh. Its directory
// and pid file are scripts/nats.sh's (home/nats/nats-server.pid), so `nats.sh stop`
// and the stack's status find it.
type HostNATS struct {
	Service
	Config NATSServerConfig `json:"config"`
}

// NATSServerConfig is the part of nats-server's configuration drover sets.
type NATSServerConfig struct {
	Listen        string            `json:"listen"`
	Authorization NATSAuthorization `json:"authorization"`
}

// NATSAuthorization lists the users nats-server accepts.
type NATSAuthorization struct {
	Users []NATSUser `json:"users"`
}

// NATSUser is one user with its password and permissions.
type NATSUser struct {
	User        string          `json:"user"`
	Password    string          `json:"password"`
	Permissions NATSPermissions `json:"permissions"`
}

// NATSPermissions is what a user may publish and subscribe to, and how many replies it
// may send to a request (allow_responses).
type NATSPermissions struct {
	Publish        NATSSubjects       `json:"publish"`
	Subscribe      NATSSubjects       `json:"subscribe"`
	AllowResponses *NATSAllowResponse `json:"allow_responses,omitempty"`
}

// NATSSubjects are the allowed subjects.
type NATSSubjects struct {
	Allow []string `json:"allow"`
}

// NATSAllowResponse bounds a user's replies.
type NATSAllowResponse struct {
	Max     int    `json:"max"`
	Expires string `json:"expires"`
}

// natsPermissions are drover's users' permissions: scripts/nats.sh's and
// natstest.Permissions (a test keeps them alike).
var natsPermissions = map[string]NATSPermissions{
	natsuser.RouteEmitter: {
		Publish:   NATSSubjects{Allow: []string{"router.register", "router.unregister", "router.greet"}},
		Subscribe: NATSSubjects{Allow: []string{"router.start", "_INBOX.>"}},
	},
	natsuser.Router: {
		Publish:        NATSSubjects{Allow: []string{"router.start"}},
		Subscribe:      NATSSubjects{Allow: []string{"router.*"}},
		AllowResponses: &NATSAllowResponse{Max: 2, Expires: "1m"},
	},
}

// AddHostNATS describes the nats-server of a multi-host stack on the router host of n,
// port DefaultNATSPort, with each user's password (made once, kept in
// NATSPasswordFile), sets s.NATS to it and returns it; Start starts it. Call it before
// AddRouting and PlaceOnHosts.
func (s *Stack) AddHostNATS(n *HostNetwork, detached bool) (*HostNATS, error) {
	router := n.Host(HostRouter)
	h := &HostNATS{}
	h.Name = "nats"
	h.Dir = filepath.Join(s.Home, "nats")
	h.Binary = NATSServerBinary
	h.Detached = detached
	h.ConfigArgs = []string{"-c"}
	h.Netns = router.Netns
	h.Config.Listen = net.JoinHostPort(router.IP, strconv.Itoa(DefaultNATSPort))
	files := map[string]string{}
	for _, u := range natsuser.All {
		files[u] = NATSPasswordFile(s.Home, u)
		password, err := ensureSecretFile(files[u])
		if err != nil {
			return nil, fmt.Errorf("nats: %w", err)
		}
		h.Config.Authorization.Users = append(h.Config.Authorization.Users, NATSUser{User: u, Password: password, Permissions: natsPermissions[u]})
	}
	s.NATS = &NATS{URL: "nats://" + h.Config.Listen, Own: true, PasswordFiles: files}
	if !detached {
		s.NATS.Embedded = h
	}
	return h, nil
}

// Start writes the configuration, starts nats-server on the router host and waits until
// the router user can connect.
func (h *HostNATS) Start(ctx context.Context, n *NATS) error {
	return h.start(ctx, h.Config, ComponentStartTimeout, n.ping)
}

// Shutdown stops the server (a test stack's NATS.Shutdown).
func (h *HostNATS) Shutdown() { _ = h.Stop(context.Background()) }

// Restart stops the server and starts it again with the same configuration.
func (h *HostNATS) Restart() error {
	if err := h.Stop(context.Background()); err != nil {
		return err
	}
	users := map[string]string{}
	for _, u := range natsuser.All {
		users[u] = filepath.Join(filepath.Dir(h.Dir), "nats", u+".password")
	}
	n := &NATS{URL: "nats://" + h.Config.Listen, PasswordFiles: users}
	return h.Start(context.Background(), n)
}
