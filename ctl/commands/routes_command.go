package commands

import (
	"cmp"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"drover.dev/ctl/output"
	routeemitterv1 "drover.dev/proto/gen/drover/routeemitter/v1"
)

// DefaultRouteEmitterAddress is the route-emitter's gRPC address in the dev stack.
const DefaultRouteEmitterAddress = "127.0.0.1:17010"

// EnvRouteEmitterAddress overrides DefaultRouteEmitterAddress.
const EnvRouteEmitterAddress = "DROVER_ROUTE_EMITTER_ADDRESS"

// routeEmitterName names the route-emitter in errors.
const routeEmitterName = "route-emitter"

func routesCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "routes [--process-guid GUID] [--hostname HOST] [--route-emitter ADDR]", GroupID: groupLRPs, Args: exactArgs(),
		Short: "Show the route-emitter's routing table",
		Long: "Asks a route-emitter (RouteEmitterService, mutual TLS with droverctl's certificate)\n" +
			"which routes it registers with the routers: one row per hostname and (process guid,\n" +
			"container port), with the endpoints as host:port#index (plus the TLS port and the\n" +
			"presence of EVACUATING / SUSPECT instances). The line above the table shows the\n" +
			"emitter's mode, whether it is active, its last full sync and BBS event, the register\n" +
			"interval the routers asked for and whether NATS is connected. With --json, one line\n" +
			"per route.",
		Example: examples("routes", "routes --hostname busybox-httpd.example.com", "routes --process-guid my-app --json | jq .endpoints"),
	}
	processGUID := cmd.Flags().String("process-guid", "", "only the routes of this process `GUID`")
	hostname := cmd.Flags().String("hostname", "", "only the routes of this `HOST`name")
	address := cmd.Flags().String("route-emitter", "", "route-emitter gRPC address `HOST:PORT` (env "+EnvRouteEmitterAddress+"; default "+DefaultRouteEmitterAddress+")")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		addr := s.routeEmitterAddress(*address)
		resp, err := s.listRoutes(ctx, addr, &routeemitterv1.ListRoutesRequest{ProcessGuid: *processGUID, Hostname: *hostname})
		if err != nil {
			return err
		}
		if s.json() {
			for _, r := range resp.GetRoutes() {
				if err := s.jsonLine(output.RouteView(r)); err != nil {
					return err
				}
			}
			return nil
		}
		if _, err := fmt.Fprintln(s.stdout, output.RouteEmitterHeader(resp, s.now())); err != nil {
			return err
		}
		return s.render(output.RouteTable(resp.GetRoutes()))
	})
	return cmd
}

// routeEmitterAddress is the --route-emitter flag, else $DROVER_ROUTE_EMITTER_ADDRESS,
// else DefaultRouteEmitterAddress.
func (s *session) routeEmitterAddress(flagValue string) string {
	return cmp.Or(flagValue, s.getenv(EnvRouteEmitterAddress), DefaultRouteEmitterAddress)
}

// listRoutes calls ListRoutes on the route-emitter at addr with droverctl's
// certificates, bounded by --timeout; its errors name the route-emitter.
func (s *session) listRoutes(ctx context.Context, addr string, req *routeemitterv1.ListRoutesRequest) (*routeemitterv1.ListRoutesResponse, error) {
	conn, err := s.dialService(routeEmitterName, addr)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, s.opts.timeout)
	defer cancel()
	resp, err := routeemitterv1.NewRouteEmitterServiceClient(conn).ListRoutes(callCtx, req)
	if err != nil {
		return nil, s.serviceError(routeEmitterName, addr, err)
	}
	return resp, nil
}
