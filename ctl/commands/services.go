package commands

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/models"
)

// dialService connects to a drover component other than the BBS (the route-emitter,
// the stager) at addr with droverctl's own certificate, as the operator. name names
// the component in errors. The connection is closed with the session.
func (s *session) dialService(name, addr string) (*grpc.ClientConn, error) {
	if _, err := s.bbs(); err != nil { // resolves the target's certificates
		return nil, err
	}
	tlsConfig, err := s.target.TLS.Client()
	if err != nil {
		return nil, models.NewError(ErrTypeInvalidTarget, "%s: %v", s.target, err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsConfig)))
	if err != nil {
		return nil, models.NewError(ErrTypeInvalidTarget, "%s at %s: %v", name, addr, err)
	}
	s.conns = append(s.conns, conn)
	return conn, nil
}

// serviceError types an error of a call to the component name at addr and names it;
// an interruption stays one, and a deadline names --timeout.
func (s *session) serviceError(name, addr string, err error) error {
	if status.Code(err) == codes.Canceled || errors.Is(err, context.Canceled) {
		return err
	}
	e := models.FromError(err)
	msg := fmt.Sprintf("%s at %s: %s", name, addr, e.Message)
	if status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("%s at %s did not answer within %s (--timeout)", name, addr, s.opts.timeout)
	}
	return &models.Error{Type: e.Type, Message: msg}
}
