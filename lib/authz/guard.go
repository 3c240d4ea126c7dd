package authz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// plaintextAuthType is the AuthType of grpc's insecure credentials.
const plaintextAuthType = "insecure"

// Rule says who may call one method.
type Rule struct {
	// Roles may call the method.
	Roles []Role
	// Check, when set, runs for an admitted caller on the request (unary) or on each
	// message the handler receives (streams), and may refuse it with a PermissionDenied
	// status (the guard prefixes the method when the message lacks it); other errors
	// are returned as they are.
	Check func(id Identity, req any) error
}

// Allow is a rule admitting roles, without a request check.
func Allow(roles ...Role) Rule { return Rule{Roles: roles} }

// Policy is the rule of every method a server serves, keyed by full method name
// ("/drover.bbs.v1.TaskService/DesireTask", the generated *_FullMethodName constants).
type Policy map[string]Rule

// With returns a copy of p with the rules of others added (later ones win).
func (p Policy) With(others ...Policy) Policy {
	out := make(Policy, len(p))
	for _, q := range append([]Policy{p}, others...) {
		for method, rule := range q {
			out[method] = rule
		}
	}
	return out
}

// Guard authenticates and authorises every call of a gRPC server: it names the caller
// from its verified client certificate, refuses with PermissionDenied a caller whose
// certificate has no role or whose role the method's rule does not admit (and every
// method without a rule), runs the rule's Check, and hands the admitted Identity to the
// handler in the context (FromContext).
type Guard struct {
	names  Names
	policy Policy
	logger *slog.Logger
	denied *prometheus.CounterVec
	// plaintext is the identity of callers on a connection without TLS; nil refuses them.
	plaintext *Identity
}

// GuardOptions configure NewGuard.
type GuardOptions struct {
	Names  Names
	Policy Policy
	Logger *slog.Logger
	// Registerer, when set, receives drover_authz_denied_total{method,role}.
	Registerer prometheus.Registerer
}

// NewGuard makes a guard; callers without TLS are refused (see Plaintext).
func NewGuard(opts GuardOptions) (*Guard, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	denied := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_authz_denied_total",
		Help: "Calls refused with PermissionDenied, by method and by the caller's role (empty when the certificate has none).",
	}, []string{"method", "role"})
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(denied); err != nil {
			return nil, fmt.Errorf("authz metrics: %w", err)
		}
	}
	return &Guard{names: opts.Names, policy: opts.Policy, logger: logger, denied: denied}, nil
}

// Plaintext returns a copy of the guard that gives callers on connections without TLS
// the identity id, for listeners that have no TLS by design: the BBS's in-process
// server behind its HTTPS API (which admits operators only), or a component started
// without a tls block (tests and local use), whose callers are then all trusted as id.
func (g *Guard) Plaintext(id Identity) *Guard {
	c := *g
	c.plaintext = &id
	return &c
}

// ComponentGuard is the guard of a component's gRPC server (rep, auctioneer,
// route-emitter) with policy. A component started without a tls block (tests and
// local use only) cannot authenticate anyone: every caller is then trusted as an
// operator, and it says so in a warning.
func ComponentGuard(names Names, policy Policy, tlsEnabled bool, reg prometheus.Registerer, logger *slog.Logger) (*Guard, error) {
	g, err := NewGuard(GuardOptions{Names: names, Policy: policy, Logger: logger, Registerer: reg})
	if err != nil || tlsEnabled {
		return g, err
	}
	g.logger.Warn("authorisation-disabled", "detail", "no tls: every caller of the gRPC server is trusted as an operator")
	return g.Plaintext(Identity{Role: RoleOperator}), nil
}

// Identify names the caller of ctx from its TLS peer certificate.
func (g *Guard) Identify(ctx context.Context) (Identity, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Identity{}, errors.New("no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		if p.AuthInfo != nil && p.AuthInfo.AuthType() != plaintextAuthType {
			return Identity{}, fmt.Errorf("unsupported transport security %q", p.AuthInfo.AuthType())
		}
		if g.plaintext == nil {
			return Identity{}, errors.New("no TLS: a client certificate is required")
		}
		return *g.plaintext, nil
	}
	if len(info.State.VerifiedChains) == 0 {
		return Identity{}, errors.New("no verified client certificate")
	}
	return g.names.Identify(info.State.VerifiedChains[0])
}

// admit decides whether the caller of ctx may call method, returning its identity.
func (g *Guard) admit(ctx context.Context, method string) (Identity, Rule, error) {
	id, err := g.Identify(ctx)
	if err != nil {
		return id, Rule{}, g.deny(id, method, err.Error())
	}
	rule, ok := g.policy[method]
	if !ok {
		g.logger.Error("method-without-rule", "method", method)
		return id, Rule{}, g.deny(id, method, "the method has no authorisation rule")
	}
	if !slices.Contains(rule.Roles, id.Role) {
		return id, Rule{}, g.deny(id, method, "role not allowed")
	}
	return id, rule, nil
}

// deny logs and counts a refusal and returns the PermissionDenied status the caller sees.
func (g *Guard) deny(id Identity, method, reason string) error {
	g.denied.WithLabelValues(method, string(id.Role)).Inc()
	g.logger.Info("permission-denied", "method", method, "identity", id.String(), "reason", reason)
	return status.Errorf(codes.PermissionDenied, "%s may not call %s: %s", id, method, reason)
}

// check runs the rule's request check, logging and counting a refusal.
func (g *Guard) check(id Identity, rule Rule, method string, req any) error {
	if rule.Check == nil {
		return nil
	}
	err := rule.Check(id, req)
	if err == nil {
		return nil
	}
	g.denied.WithLabelValues(method, string(id.Role)).Inc()
	g.logger.Info("permission-denied", "method", method, "identity", id.String(), "reason", err.Error())
	if st, ok := status.FromError(err); ok && st.Code() == codes.PermissionDenied && !strings.Contains(st.Message(), method) {
		return status.Errorf(codes.PermissionDenied, "%s: %s", method, st.Message())
	}
	return err
}

// UnaryInterceptor guards unary calls.
func (g *Guard) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		id, rule, err := g.admit(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		if err := g.check(id, rule, info.FullMethod, req); err != nil {
			return nil, err
		}
		return handler(NewContext(ctx, id), req)
	}
}

// StreamInterceptor guards streaming calls; the rule's Check runs on every message the
// handler receives.
func (g *Guard) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		id, rule, err := g.admit(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return handler(srv, &guardedStream{ServerStream: ss, ctx: NewContext(ss.Context(), id),
			check: func(m any) error { return g.check(id, rule, info.FullMethod, m) }})
	}
}

// guardedStream carries the identity in its context and checks each received message.
type guardedStream struct {
	grpc.ServerStream
	ctx   context.Context
	check func(any) error
}

func (s *guardedStream) Context() context.Context { return s.ctx }

func (s *guardedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.check(m)
}
