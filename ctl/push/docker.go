package push

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"drover.dev/lib/dockerref"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// Image is what a docker push reads of an image from its registry: the digest the
// reference resolved to and the parts of its config that make the LRP.
type Image struct {
	// Digest is the manifest (or index) digest the reference resolved to, sha256:HEX.
	Digest     string
	Entrypoint []string
	Cmd        []string
	User       string
	WorkingDir string
	// ExposedPorts are the config's exposed ports, "8080/tcp" or "53/udp".
	ExposedPorts []string
}

// Credentials log in to a registry; both empty means anonymous.
type Credentials struct {
	Username string
	Password string
}

// DockerApp is one docker push's app: its name and settings and the image it runs.
type DockerApp struct {
	Name      string
	Image     dockerref.Ref
	Instances int32
	MemoryMB  int32
	DiskMB    int32
	// Domain is the routing domain: the app is routed at Route, else Name.Domain.
	Domain string
	// Route is the hostname the app is routed at; empty means Name.Domain.
	Route string
	// Command, when set, runs with /bin/sh -c instead of the image's entrypoint + cmd.
	Command string
	// Port is the port the app listens on, checked and routed; 0 means the image's
	// exposed TCP port.
	Port uint32
	// Credentials log in to the image's registry; the cells get them through the
	// DesiredLRP's image_username and image_password.
	Credentials Credentials
}

// MaxCommandLength bounds --command, in bytes.
const MaxCommandLength = 4096

// GUID is the app guid (the same as a bits push of the same name: pushing an image
// replaces the app's staged versions, and the other way round).
func (a DockerApp) GUID() string { return AppGUID(a.Name) }

// Hostname is where the app is routed.
func (a DockerApp) Hostname() string {
	if a.Route != "" {
		return a.Route
	}
	return a.Name + "." + a.Domain
}

// Validate checks the settings a person chose; errors name the flag. The image
// reference is checked when it is parsed (dockerref).
func (a DockerApp) Validate() error {
	base := App{Name: a.Name, Stack: "docker", Instances: a.Instances, MemoryMB: a.MemoryMB, DiskMB: a.DiskMB, Domain: a.Domain}
	if err := base.Validate(); err != nil {
		return err
	}
	switch {
	case a.Image.Repository == "":
		return fmt.Errorf("--docker-image is required")
	case a.Route != "" && (len(a.Route) > 253 || !domainPattern.MatchString(a.Route)):
		return fmt.Errorf("--route %q is not a valid DNS hostname", a.Route)
	case len(a.Command) > MaxCommandLength:
		return fmt.Errorf("--command must be at most %d bytes", MaxCommandLength)
	case strings.ContainsAny(a.Command, "\x00\n\r"):
		return fmt.Errorf("--command must be one line without NUL")
	case a.Port > 65535:
		return fmt.Errorf("--port %d must be between 1 and 65535", a.Port)
	case (a.Credentials.Username == "") != (a.Credentials.Password == ""):
		return fmt.Errorf("registry credentials need both a user name and a password")
	}
	return nil
}

// DockerVersion is the first 8 hex digits of a SHA-256 over what makes a docker app's
// version: the image (registry, repository, digest), the command, the port, the route,
// memory, disk and the registry user name (not the password). A new digest is a new
// version; a change of instances only scales the existing one.
func DockerVersion(app DockerApp, img Image) string {
	h := sha256.New()
	for _, s := range []string{
		"docker", app.Image.Registry, app.Image.Repository, img.Digest, app.Command,
		app.Hostname(), app.Credentials.Username,
	} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var n [12]byte
	binary.BigEndian.PutUint32(n[0:4], uint32(app.MemoryMB))
	binary.BigEndian.PutUint32(n[4:8], uint32(app.DiskMB))
	binary.BigEndian.PutUint32(n[8:12], app.Port)
	h.Write(n[:])
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// AppPortOf is the port the app listens on: --port, else the image's one exposed TCP
// port, else the lowest of several (Docker lists them as "PORT/PROTO"; no protocol
// is tcp). An image that exposes no TCP port needs --port.
func AppPortOf(app DockerApp, img Image) (uint32, error) {
	if app.Port != 0 {
		return app.Port, nil
	}
	var tcp []uint32
	for _, p := range img.ExposedPorts {
		num, proto, _ := strings.Cut(p, "/")
		if proto != "" && !strings.EqualFold(proto, "tcp") {
			continue
		}
		n, err := strconv.ParseUint(num, 10, 16)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("image %s exposes an invalid port %q: pass --port", app.Image, p)
		}
		tcp = append(tcp, uint32(n))
	}
	if len(tcp) == 0 {
		return 0, fmt.Errorf("image %s exposes no TCP port (EXPOSE): pass --port PORT", app.Image)
	}
	return slices.Min(tcp), nil
}

// dockerUser is the user the app runs as: the image's USER, root when it names none
// (as docker run does; root in the container is unprivileged on the cell).
func dockerUser(img Image) string {
	if img.User != "" {
		return img.User
	}
	return "root"
}

// DockerDesiredLRP is the LRP that runs the image pinned to its digest, as Cloud
// Controller desires a docker app: rootfs docker://REGISTRY/REPOSITORY@DIGEST and the
// registry credentials, the image's entrypoint + cmd (or --command through /bin/sh -c)
// as the image's user in its working directory, PORT set, a TCP check on the port and
// the route Hostname → port on cf-router. The process guid is app guid + version.
func DockerDesiredLRP(app DockerApp, img Image) (*modelsv1.DesiredLRP, error) {
	if app.Image.Registry == "" {
		return nil, fmt.Errorf("image %s names no registry", app.Image)
	}
	pinned, err := app.Image.WithDigest(img.Digest)
	if err != nil {
		return nil, fmt.Errorf("registry answered digest %q for %s: %w", img.Digest, app.Image, err)
	}
	port, err := AppPortOf(app, img)
	if err != nil {
		return nil, err
	}
	run := &modelsv1.RunAction{User: dockerUser(img), Dir: img.WorkingDir}
	switch {
	case app.Command != "":
		run.Path, run.Args = "/bin/sh", []string{"-c", app.Command}
	case len(img.Entrypoint)+len(img.Cmd) > 0:
		argv := append(slices.Clone(img.Entrypoint), img.Cmd...)
		run.Path, run.Args = argv[0], argv[1:]
	default:
		return nil, fmt.Errorf("image %s has no ENTRYPOINT or CMD: pass --command", app.Image)
	}
	if run.Path == "" {
		return nil, fmt.Errorf("image %s has an empty ENTRYPOINT/CMD: pass --command", app.Image)
	}
	portEnv := &modelsv1.EnvironmentVariable{Name: "PORT", Value: strconv.FormatUint(uint64(port), 10)}
	run.Env = []*modelsv1.EnvironmentVariable{portEnv}
	version := DockerVersion(app, img)
	annotation, _ := json.Marshal(LRPAnnotation{ // cannot fail
		AppName: app.Name, AppGUID: app.GUID(), Version: version, DockerImage: pinned.String(),
	})
	return &modelsv1.DesiredLRP{
		ProcessGuid:     ProcessGUID(app.GUID(), version),
		Domain:          AppsDomain,
		Instances:       app.Instances,
		Rootfs:          pinned.String(),
		ImageUsername:   app.Credentials.Username,
		ImagePassword:   app.Credentials.Password,
		MemoryMb:        app.MemoryMB,
		DiskMb:          app.DiskMB,
		Env:             []*modelsv1.EnvironmentVariable{portEnv},
		Action:          &modelsv1.Action{Action: &modelsv1.Action_Run{Run: run}},
		Ports:           []uint32{port},
		CheckDefinition: &modelsv1.CheckDefinition{Checks: []*modelsv1.Check{{TcpCheck: &modelsv1.TCPCheck{Port: port}}}},
		StartTimeout:    lrpStartTimeout,
		Routes:          RoutesToPort(app.Hostname(), port),
		LogGuid:         app.GUID(),
		Annotation:      string(annotation),
	}, nil
}
