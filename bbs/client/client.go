// Package client is the Go client of the BBS: one gRPC connection exposing every
// BBS service, with mutual TLS.
package client

import (
	"crypto/tls"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
)

// MaxMessageBytes is the largest message the client accepts (large lists).
const MaxMessageBytes = 64 << 20

// Client holds one connection and a stub per BBS service.
type Client struct {
	Conn *grpc.ClientConn
	bbsv1.DesiredLRPServiceClient
	bbsv1.ActualLRPServiceClient
	bbsv1.TaskServiceClient
	bbsv1.DomainServiceClient
	bbsv1.CellServiceClient
	bbsv1.LockServiceClient
	bbsv1.EventServiceClient
	bbsv1.ConvergenceServiceClient
}

// New connects to the BBS gRPC address. A nil tlsConfig means plaintext (tests only).
func New(address string, tlsConfig *tls.Config, opts ...grpc.DialOption) (*Client, error) {
	creds := insecure.NewCredentials()
	if tlsConfig != nil {
		creds = credentials.NewTLS(tlsConfig)
	}
	opts = append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes)),
	}, opts...)
	conn, err := grpc.NewClient(address, opts...)
	if err != nil {
		return nil, fmt.Errorf("bbs client %s: %w", address, err)
	}
	return &Client{
		Conn:                     conn,
		DesiredLRPServiceClient:  bbsv1.NewDesiredLRPServiceClient(conn),
		ActualLRPServiceClient:   bbsv1.NewActualLRPServiceClient(conn),
		TaskServiceClient:        bbsv1.NewTaskServiceClient(conn),
		DomainServiceClient:      bbsv1.NewDomainServiceClient(conn),
		CellServiceClient:        bbsv1.NewCellServiceClient(conn),
		LockServiceClient:        bbsv1.NewLockServiceClient(conn),
		EventServiceClient:       bbsv1.NewEventServiceClient(conn),
		ConvergenceServiceClient: bbsv1.NewConvergenceServiceClient(conn),
	}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.Conn.Close() }
