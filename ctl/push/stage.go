package push

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/status"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// StageRequest is what the stager is asked to stage for app: its package, stack,
// buildpacks, env and limits, the droplet going to app.DropletKey().
func StageRequest(app App) *stagerv1.StageRequest {
	env := make([]*modelsv1.EnvironmentVariable, 0, len(app.Env))
	for _, e := range app.Env {
		env = append(env, &modelsv1.EnvironmentVariable{Name: e.Name, Value: e.Value})
	}
	return &stagerv1.StageRequest{
		AppGuid: app.GUID(), AppName: app.Name,
		PackageKey: app.PackageKey, PackageSha256: app.PackageSHA256,
		Stack: app.Stack, Buildpacks: app.Buildpacks, Env: env,
		MemoryMb: app.MemoryMB, DiskMb: app.DiskMB,
		DropletKey: app.DropletKey(),
	}
}

// stage asks the stager to stage the app and prints its events as they come: the
// task that stages, the staging log lines, then the result or the failure.
func (p *pusher) stage(ctx context.Context, app App) (*stagerv1.StagingResult, error) {
	if p.Stager == nil {
		return nil, errors.New("staging failed: no stager to ask")
	}
	stream, err := p.Stager.Stage(ctx, StageRequest(app))
	if err != nil {
		return nil, stagerError(ctx, err)
	}
	logLines := 0
	for {
		resp, err := stream.Recv()
		switch {
		case errors.Is(err, io.EOF):
			return nil, errors.New("staging failed: the stager's stream ended without a result or failure")
		case err != nil:
			return nil, stagerError(ctx, err)
		}
		switch ev := resp.GetEvent().(type) {
		case *stagerv1.StageResponse_Started:
			p.out.printf("Staging %s with task %s on stack %s%s", app.Name, ev.Started.GetTaskGuid(), ev.Started.GetStack(),
				buildpackList(ev.Started.GetBuildpacks()))
		case *stagerv1.StageResponse_Log:
			logLines++
			p.out.logLine(logPrefix(StagingLogSource, ev.Log), ev.Log.GetText())
		case *stagerv1.StageResponse_Result:
			if err := CheckStagingResult(ev.Result); err != nil {
				return nil, fmt.Errorf("staging failed: %w", err)
			}
			r := ev.Result
			p.out.printf("Staged %s: %s buildpack, start command %q", app.Name, r.GetBuildpack(), r.GetStartCommand())
			if r.GetCellId() != "" {
				p.out.printf("Staging ran on %s in %s; droplet %s", r.GetCellId(),
					(time.Duration(r.GetDurationMs()) * time.Millisecond).String(), HumanBytes(r.GetDropletSize()))
			}
			return r, nil
		case *stagerv1.StageResponse_Failure:
			if logLines == 0 {
				for _, line := range ev.Failure.GetLastLines() {
					p.out.logLine("   ", line)
				}
			}
			return nil, fmt.Errorf("staging failed: %s", orUnknown(ev.Failure.GetReason()))
		}
	}
}

// buildpackList is " (buildpacks: a, b)", or "" for none.
func buildpackList(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return " (buildpacks: " + strings.Join(names, ", ") + ")"
}

// stagerError is a failed Stage call or stream as "staging failed: <the stager's
// message>"; an interrupted push keeps ctx's error.
func stagerError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("staging did not finish: %w", ctx.Err())
	}
	return fmt.Errorf("staging failed: %s", statusMessage(err))
}

// statusMessage is a gRPC error's message without the "rpc error: code = ..." prefix.
func statusMessage(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

// defaultStack asks the stager which stack a push without --stack stages on.
func (p *pusher) defaultStack(ctx context.Context) (string, error) {
	if p.Stager == nil {
		return "", errors.New("no --stack and no stager to ask for the default stack")
	}
	stacks, err := p.Stager.ListStacks(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("asking the stager for the default stack: %s", statusMessage(err))
	}
	for _, s := range stacks {
		if s.GetDefault() {
			return s.GetName(), nil
		}
	}
	return "", fmt.Errorf("the stager has no default stack: pass --stack")
}
