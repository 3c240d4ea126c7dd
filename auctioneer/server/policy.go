package server

import (
	"drover.dev/lib/authz"
	auctioneerv1 "drover.dev/proto/gen/drover/auctioneer/v1"
)

// Policy is who may ask the auctioneer for placements (docs/architecture.md
// "Authorisation"): the BBS (which also sends the converger's requests) and operators.
func Policy() authz.Policy {
	placers := authz.Allow(authz.RoleOperator, authz.RoleBBS)
	return authz.CommonPolicy().With(authz.Policy{
		auctioneerv1.AuctioneerService_RequestLRPAuctions_FullMethodName:  placers,
		auctioneerv1.AuctioneerService_RequestTaskAuctions_FullMethodName: placers,
	})
}
