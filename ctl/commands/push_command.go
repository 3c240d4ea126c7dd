package commands

import (
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"drover.dev/bbs/models"
	"drover.dev/ctl/push"
	"drover.dev/ctl/target"
	fsclient "drover.dev/fileserver/client"
	"drover.dev/fileserver/signedurl"
)

// Push defaults and the environment variables that change them.
const (
	DefaultFileserverURL = "http://127.0.0.1:8080"
	EnvFileserverURL     = "DROVER_FILESERVER_URL"
	EnvFileserverKey     = "DROVER_FILESERVER_KEY"
	EnvAppsDomain        = "DROVER_APPS_DOMAIN"
	DefaultAppsDomain    = "example.com"
	// DefaultPushStartWait bounds the wait for a push's instances unless --timeout is given.
	DefaultPushStartWait = 3 * time.Minute
	// DefaultPushTimeout bounds a whole push unless --push-timeout is given.
	DefaultPushTimeout = 5 * time.Minute
	// fileserverKeyPath is the signing key inside the .drover directory.
	fileserverKeyPath = "fileserver/signing.key"
)

// ErrTypePushFailed is the error type of a push that did not end with its app running.
const ErrTypePushFailed models.ErrorType = "PushFailed"

const pushDetails = "Does what Cloud Controller does for 'cf push': lists DIR's files and asks the\n" +
	"fileserver which it already has (resource matching), uploads only the others, and\n" +
	"computes the app's version from the package, stack, memory, disk, buildpacks and\n" +
	"env. When an LRP of that version exists it is only scaled to --instances; otherwise\n" +
	"the stager stages the package with the stack's buildpacks: with no -b, each\n" +
	"registered buildpack of the stack (droverctl buildpacks) is tried in order and the\n" +
	"first whose bin/detect accepts the app builds it; with -b, the named buildpacks\n" +
	"run in order, all but the last supplying dependencies and the last building the\n" +
	"droplet. The buildpacks' output is streamed as \"[STG/0] ...\". Without --stack the\n" +
	"stager's default stack is used. The droplet then runs as the LRP\n" +
	"<app guid>-<version> in domain apps, started by the stack's launcher with the\n" +
	"buildpack's start command, -e variables and PORT=8080, routed at NAME.DOMAIN.\n" +
	"--wait prints progress until every instance is RUNNING; a failed staging desires\n" +
	"nothing; a crash or --timeout (default 3m here) removes the new LRP (each BBS call\n" +
	"is bounded by 10s or less). Older versions of the app are unrouted and removed\n" +
	"only after the new one runs and the route-emitter routes it. Progress goes to\n" +
	"stdout as text. Without --instances, a re-push keeps the instance count (and\n" +
	"allow_ssh) of the app's running version, as cf push does; a first push runs 1.\n\n" +
	"The fileserver is --fileserver (env " + EnvFileserverURL + ", default " + DefaultFileserverURL + "),\n" +
	"its signing key --fileserver-key (env " + EnvFileserverKey + ", default .drover/" + fileserverKeyPath + ").\n" +
	"The stager is --stager (env " + EnvStagerAddress + ", default " + DefaultStagerAddress + ").\n" +
	"The domain defaults to $" + EnvAppsDomain + ", else " + DefaultAppsDomain + ". --push-timeout bounds\n" +
	"the whole push (default 5m)."

func pushCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "push --name NAME [flags] (DIR | --docker-image REF)", GroupID: groupApps,
		Short: "Upload, stage and run an app, replacing its older version without downtime",
		Long:  pushDetails + pushDockerDetails,
		Example: examples(
			"push examples/static-site --name hello",
			"push examples/node-express --name api -b nodejs -e NODE_ENV=production -i 2",
			"push examples/shell-app --name worker --stack busybox --instances 2 --memory 128M",
			"push --name web --docker-image 127.0.0.1:5000/drover/web:v1 --insecure-registry -i 2",
			"push . --name hello --domain apps.internal --wait=false",
		),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs // DIR
		},
	}
	name := cmd.Flags().String("name", "", "the app's `NAME` (a DNS label; required)")
	stack := cmd.Flags().String("stack", "", "the `STACK` to stage and run on (default: the stager's default stack)")
	buildpacks := cmd.Flags().StringArrayP("buildpack", "b", nil, "a buildpack `NAME` to stage with (repeatable: supply buildpacks, then the final one; default: detect)")
	envVars := cmd.Flags().StringArrayP("env", "e", nil, "an environment variable `NAME=VALUE` for staging and the app (repeatable)")
	stager := cmd.Flags().String("stager", "", "stager gRPC address `HOST:PORT` (env "+EnvStagerAddress+"; default "+DefaultStagerAddress+")")
	instances := cmd.Flags().IntP("instances", "i", 1, "how many instances to run (`N`; a re-push without it keeps the running count)")
	memory := cmd.Flags().StringP("memory", "m", "64M", "memory limit per instance: a `SIZE` in MB (64M, 1G)")
	disk := cmd.Flags().String("disk", "256M", "disk limit per instance: a `SIZE` in MB (256M, 1G)")
	domain := cmd.Flags().String("domain", "", "route the app at NAME.`DOMAIN` (env "+EnvAppsDomain+"; default "+DefaultAppsDomain+")")
	wait := cmd.Flags().Bool("wait", true, "wait until every instance is RUNNING (false only when no other version runs)")
	fileserver := cmd.Flags().String("fileserver", "", "fileserver `URL` (env "+EnvFileserverURL+"; default "+DefaultFileserverURL+")")
	keyFile := cmd.Flags().String("fileserver-key", "", "the fileserver's signing key `FILE` (env "+EnvFileserverKey+")")
	routeEmitter := cmd.Flags().String("route-emitter", "", "route-emitter gRPC address `HOST:PORT` (env "+EnvRouteEmitterAddress+")")
	var pushTimeout time.Duration = DefaultPushTimeout
	cmd.Flags().Var(&durationValue{d: &pushTimeout}, "push-timeout", "bounds the whole push: a `DURATION`")
	docker := addDockerPushFlags(cmd.Flags())
	cmd.Args = pushArgs(docker)
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		if err := docker.check(cmd); err != nil {
			return err
		}
		app, err := pushApp(s, pushFlags{name: *name, stack: *stack, instances: *instances, memory: *memory, disk: *disk,
			domain: *domain, buildpacks: *buildpacks, env: *envVars})
		if err != nil {
			return err
		}
		if pushTimeout <= 0 {
			return usagef("--push-timeout must be positive")
		}
		startWait := s.opts.timeout
		if !s.opts.timeoutSet {
			startWait = DefaultPushStartWait
		}
		s.opts.timeout = min(s.opts.timeout, DefaultTimeout)
		if docker.image != "" {
			return docker.dockerPush(ctx, s, app, *wait, !cmd.Flags().Changed("instances"), startWait, pushTimeout, *routeEmitter)
		}
		blobs, err := s.fileserver(*fileserver, *keyFile)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, pushTimeout)
		defer cancel()
		opts := push.Options{Dir: args[0], App: app, Wait: *wait, StartTimeout: startWait, KeepInstances: !cmd.Flags().Changed("instances")}
		_, err = push.Push(ctx, opts, push.Deps{
			BBS:       pushBBS{s: s},
			Blobstore: blobs,
			Stager:    pushStager{s: s, addr: s.stagerAddress(*stager)},
			Logs:      pushLogs{s: s},
			Routes:    pushRoutes{s: s, addr: s.routeEmitterAddress(*routeEmitter)},
			ScanDir:   fsclient.ScanDir,
			Out:       s.stdout,
		})
		return pushError(ctx, err)
	})
	return cmd
}

// pushFlags are the app settings of a push as typed.
type pushFlags struct {
	name, stack          string
	instances            int
	memory, disk, domain string
	buildpacks, env      []string
}

// pushApp reads and checks the app's flags; the error names every bad one.
func pushApp(s *session, f pushFlags) (push.App, error) {
	if f.name == "" {
		return push.App{}, usagef("push needs --name NAME")
	}
	if f.instances < 0 || f.instances > 1<<31-1 {
		return push.App{}, usagef("--instances must be a non-negative integer, not %d", f.instances)
	}
	memoryMB, err := push.ParseMegabytes(f.memory)
	if err != nil {
		return push.App{}, usagef("--memory: %v", err)
	}
	diskMB, err := push.ParseMegabytes(f.disk)
	if err != nil {
		return push.App{}, usagef("--disk: %v", err)
	}
	env, envErr := push.ParseEnv(f.env)
	app := push.App{
		Name: f.name, Stack: f.stack, Instances: int32(f.instances), MemoryMB: memoryMB, DiskMB: diskMB,
		Domain:     cmp.Or(f.domain, s.getenv(EnvAppsDomain), DefaultAppsDomain),
		Buildpacks: f.buildpacks, Env: env,
	}
	if err := errors.Join(app.Validate(), envErr); err != nil {
		return push.App{}, usagef("%s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return app, nil
}

// fileserver builds the fileserver client with its signing key.
func (s *session) fileserver(urlFlag, keyFlag string) (*fsclient.Client, error) {
	base := cmp.Or(urlFlag, s.getenv(EnvFileserverURL), DefaultFileserverURL)
	keyFile := cmp.Or(keyFlag, s.getenv(EnvFileserverKey))
	if keyFile == "" {
		home, err := target.FindHome(s.getenv(target.EnvHome), s.env.WorkDir)
		if err != nil {
			return nil, models.NewError(ErrTypeInvalidTarget, "no fileserver signing key: pass --fileserver-key or set %s (%v)", EnvFileserverKey, err)
		}
		keyFile = filepath.Join(home, fileserverKeyPath)
	}
	key, err := signedurl.ReadKey(keyFile)
	if err != nil {
		return nil, models.NewError(ErrTypeInvalidTarget, "fileserver signing key: %v", err)
	}
	return fsclient.New(base, key, nil), nil
}

// pushError types a failed push; an interruption stays one, and a deadline says
// which limit it was.
func pushError(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.Is(err, context.DeadlineExceeded):
		return models.NewError(ErrTypePushFailed, "%v (the push did not finish within --push-timeout)", err)
	}
	return models.NewError(ErrTypePushFailed, "%v", err)
}
