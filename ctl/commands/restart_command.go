package commands

import (
	"context"
	"errors"
	"os"

	"google.golang.org/protobuf/proto"

	"github.com/spf13/cobra"

	"drover.dev/bbs/models"
	"drover.dev/ctl/push"
	"drover.dev/lib/dockerref"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

const restartDetails = "Restarts every instance of an app without downtime, as a rolling deployment does:\n" +
	"a copy of the app's LRP is desired under a new version (process guid <app guid>-<new\n" +
	"version>, the same droplet, settings and instances); once all of its instances are\n" +
	"RUNNING, the old LRP is unrouted, and removed once the route-emitter routes only the\n" +
	"copy. A copy that crashes or does not start within --timeout (default 3m here) is\n" +
	"removed and the old instances keep serving. Progress goes to stdout as text.\n\n" +
	appArgHelp + " Only apps pushed with 'droverctl push'\n" +
	"can restart this way.\n\n" +
	"The BBS never hands registry credentials back to droverctl: a docker app whose image\n" +
	"needs them restarts with the credentials in $" + EnvDockerUsername + " and\n" +
	"$" + EnvDockerPassword + " (as push takes them); without them its copy cannot pull,\n" +
	"is removed, and the old instances keep serving."

func restartCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "restart APP", GroupID: groupApps, Args: exactArgs("APP"),
		Short:   "Restart an app's instances without downtime (a rolling replacement)",
		Long:    restartDetails,
		Example: examples("restart hello", "restart hello --timeout 5m"),
	}
	routeEmitter := cmd.Flags().String("route-emitter", "", "route-emitter gRPC address `HOST:PORT` (env "+EnvRouteEmitterAddress+")")
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		startWait := s.opts.timeout
		if !s.opts.timeoutSet {
			startWait = DefaultPushStartWait
		}
		s.opts.timeout = min(s.opts.timeout, DefaultTimeout)
		target, err := s.resolveApp(ctx, args[0])
		if err != nil {
			return err
		}
		guid, err := target.single()
		if err != nil {
			return err
		}
		current := target.lrp(guid)
		if current == nil {
			return models.NewError(models.ErrTypeResourceNotFound, "no app %s in domain %s", args[0], push.AppsDomain)
		}
		if dockerref.IsDocker(current.GetRootfs()) && os.Getenv(EnvDockerPassword) != "" {
			current = proto.Clone(current).(*modelsv1.DesiredLRP)
			current.ImageUsername, current.ImagePassword = os.Getenv(EnvDockerUsername), os.Getenv(EnvDockerPassword)
		}
		res, err := push.Restart(ctx, current, startWait, push.Deps{
			BBS:    pushBBS{s: s},
			Logs:   pushLogs{s: s},
			Routes: pushRoutes{s: s, addr: s.routeEmitterAddress(*routeEmitter)},
			Out:    s.stdout,
		})
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return err // interrupted: reported as such
			}
			return models.NewError(ErrTypeRestartFailed, "%v", err)
		}
		return s.confirm("restarted %s as %s", args[0], res.ProcessGUID)
	})
	return cmd
}

// ErrTypeRestartFailed is the error type of a restart that did not end with the copy
// serving.
const ErrTypeRestartFailed models.ErrorType = "RestartFailed"
