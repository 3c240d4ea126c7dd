package commands

import (
	"cmp"
	"context"
	"crypto/x509"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"drover.dev/ctl/push"
	"drover.dev/lib/dockerref"
)

// The environment variables of a docker push. The password comes only from the
// environment (as cf push takes CF_DOCKER_PASSWORD), never from a flag that shell
// history and ps would show.
const (
	EnvDockerUsername   = "DROVER_DOCKER_USERNAME"
	EnvDockerPassword   = "DROVER_DOCKER_PASSWORD"
	EnvDockerRegistry   = "DROVER_DOCKER_REGISTRY"
	EnvDockerRegistryCA = "DROVER_DOCKER_REGISTRY_CA"
)

// maxRegistryCABytes bounds --registry-ca.
const maxRegistryCABytes = 1 << 20

const pushDockerDetails = "\n\nWith --docker-image REF instead of DIR, push does what Cloud Controller does for a\n" +
	"docker app: no upload and no staging. It reads the image's digest and config from\n" +
	"its registry and desires an LRP with rootfs docker://HOST/REPO@sha256:DIGEST (pinned,\n" +
	"so a moved tag does not change running instances) that runs the image's ENTRYPOINT\n" +
	"+ CMD (or --command through /bin/sh -c) as its USER in its WORKDIR, with PORT set to\n" +
	"the image's exposed TCP port (the lowest of several; or --port), TCP-checked and routed\n" +
	"at NAME.DOMAIN (or --route). The version is a hash of the digest and the settings: a\n" +
	"new digest is a new version, replaced without downtime like a bits push. REF is\n" +
	"HOST[:PORT]/REPO[:TAG][@sha256:HEX] or docker://HOST/REPO#TAG; without a host, the\n" +
	"registry is --docker-registry (env " + EnvDockerRegistry + "). The registry is reached\n" +
	"over HTTPS (CAs: the system's plus --registry-ca, env " + EnvDockerRegistryCA + ");\n" +
	"plain HTTP only with --insecure-registry. Credentials: --docker-username (env\n" +
	EnvDockerUsername + ") and the password in $" + EnvDockerPassword + "; the cells get them\n" +
	"with the LRP, and they are never printed."

// dockerPushFlags are push's flags for --docker-image.
type dockerPushFlags struct {
	image, username, registry, registryCA, route, command string
	port                                                  uint16
	insecure                                              bool
}

// addDockerPushFlags registers the docker flags on fs.
func addDockerPushFlags(fs *pflag.FlagSet) *dockerPushFlags {
	d := &dockerPushFlags{}
	fs.StringVar(&d.image, "docker-image", "", "run the image `REF` (HOST/REPO:TAG, @sha256:DIGEST) instead of staging DIR")
	fs.StringVar(&d.username, "docker-username", "", "registry `USER` (env "+EnvDockerUsername+"; the password is $"+EnvDockerPassword+")")
	fs.StringVar(&d.registry, "docker-registry", "", "registry `HOST[:PORT]` of an image REF without one (env "+EnvDockerRegistry+")")
	fs.StringVar(&d.registryCA, "registry-ca", "", "PEM `FILE` of CAs the registry's certificate may chain to (env "+EnvDockerRegistryCA+")")
	fs.BoolVar(&d.insecure, "insecure-registry", false, "allow plain HTTP to the image's registry")
	fs.StringVar(&d.route, "route", "", "route the image's app at `HOSTNAME` instead of NAME.DOMAIN")
	fs.StringVar(&d.command, "command", "", "run `CMD` with /bin/sh -c instead of the image's ENTRYPOINT + CMD")
	fs.Uint16Var(&d.port, "port", 0, "the `PORT` the image's app listens on (default: the image's EXPOSE)")
	return d
}

// dockerOnly are the flags that only a docker push takes.
var dockerOnly = []string{"docker-username", "docker-registry", "registry-ca", "insecure-registry", "route", "command", "port"}

// pushArgs is DIR for a bits push and nothing with --docker-image.
func pushArgs(d *dockerPushFlags) cobra.PositionalArgs {
	dir := exactArgs("DIR")
	return func(cmd *cobra.Command, args []string) error {
		if d.image == "" {
			return dir(cmd, args)
		}
		if len(args) != 0 {
			return usagef("push --docker-image takes no DIR: the image is the app")
		}
		return nil
	}
}

// check refuses docker flags without --docker-image, and bits flags with it.
func (d *dockerPushFlags) check(cmd *cobra.Command) error {
	for _, name := range dockerOnly {
		if d.image == "" && cmd.Flags().Changed(name) {
			return usagef("--%s needs --docker-image", name)
		}
	}
	for _, name := range []string{"stack", "buildpack", "env", "stager", "fileserver", "fileserver-key"} {
		if d.image != "" && cmd.Flags().Changed(name) {
			return usagef("--%s is for pushing a DIR, not --docker-image", name)
		}
	}
	return nil
}

// app is the docker app of the flags on top of the checked common settings.
func (d *dockerPushFlags) app(s *session, common push.App) (push.DockerApp, error) {
	ref, err := dockerref.ParseImage(d.image)
	if err != nil {
		return push.DockerApp{}, usagef("--docker-image: %v", err)
	}
	if ref.Registry == "" {
		ref.Registry = cmp.Or(d.registry, s.getenv(EnvDockerRegistry))
		if ref.Registry == "" {
			return push.DockerApp{}, usagef("--docker-image %s names no registry: write HOST[:PORT]/REPO or pass --docker-registry HOST (env %s)", d.image, EnvDockerRegistry)
		}
		if ref, err = dockerref.Parse(ref.String()); err != nil {
			return push.DockerApp{}, usagef("--docker-registry: %v", err)
		}
	}
	creds := push.Credentials{Username: cmp.Or(d.username, s.getenv(EnvDockerUsername)), Password: s.getenv(EnvDockerPassword)}
	switch {
	case creds.Username != "" && creds.Password == "":
		return push.DockerApp{}, usagef("a registry user needs the password in $%s", EnvDockerPassword)
	case creds.Username == "" && creds.Password != "":
		return push.DockerApp{}, usagef("$%s is set: name the registry user with --docker-username or $%s", EnvDockerPassword, EnvDockerUsername)
	}
	app := push.DockerApp{
		Name: common.Name, Image: ref, Instances: common.Instances, MemoryMB: common.MemoryMB, DiskMB: common.DiskMB,
		Domain: common.Domain, Route: d.route, Command: d.command, Port: uint32(d.port), Credentials: creds,
	}
	if err := app.Validate(); err != nil {
		return push.DockerApp{}, usagef("%v", err)
	}
	return app, nil
}

// registryClient is the registry client of the flags.
func (d *dockerPushFlags) registryClient(s *session) (push.RegistryClient, error) {
	c := push.RegistryClient{Insecure: d.insecure}
	file := cmp.Or(d.registryCA, s.getenv(EnvDockerRegistryCA))
	if file == "" {
		return c, nil
	}
	info, err := os.Stat(file)
	if err != nil {
		return c, usagef("--registry-ca: %v", err)
	}
	if info.Size() > maxRegistryCABytes {
		return c, usagef("--registry-ca %s: larger than %d bytes", file, maxRegistryCABytes)
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return c, usagef("--registry-ca: %v", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return c, usagef("--registry-ca %s holds no PEM certificate", file)
	}
	c.RootCAs = pool
	return c, nil
}

// dockerPush runs a docker push with the common settings of push.
func (d *dockerPushFlags) dockerPush(ctx context.Context, s *session, common push.App, wait, keepInstances bool, startWait, pushTimeout time.Duration, routeEmitter string) error {
	app, err := d.app(s, common)
	if err != nil {
		return err
	}
	images, err := d.registryClient(s)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	opts := push.DockerOptions{App: app, Wait: wait, StartTimeout: startWait, KeepInstances: keepInstances}
	_, err = push.PushDocker(ctx, opts, push.Deps{
		BBS:    pushBBS{s: s},
		Logs:   pushLogs{s: s},
		Routes: pushRoutes{s: s, addr: s.routeEmitterAddress(routeEmitter)},
		Images: images,
		Out:    s.stdout,
	})
	return pushError(ctx, err)
}
