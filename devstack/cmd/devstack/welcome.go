package main

import (
	"os"
	"path/filepath"
	"text/template"

	"drover.dev/devstack"
)

// welcome is printed after `up`: how to reach the BBS with curl, droverctl and grpcurl.
var welcome = template.Must(template.New("welcome").Parse(`
drover dev stack is up ({{.Home}}).
  BBS gRPC   {{.BBS.Config.GRPCAddress}}   (mTLS)
  BBS HTTPS  {{.BBS.HTTPURL}}   (mTLS)
  debug      {{.BBS.DebugURL}}/metrics  {{.BBS.DebugURL}}/healthz
  logs       {{.BBS.StdoutPath}}
  certs      {{.Certs}}/{ca.crt,client.crt,client.key}
{{- with .Auctioneer}}
  auctioneer {{.Config.ListenAddress}}   (mTLS, debug {{.DebugURL}}/metrics)
{{- end}}
{{- with .Converger}}
  converger  every {{.Config.RepeatInterval}}   (debug {{.DebugURL}}/metrics, logs {{.StdoutPath}})
{{- end}}
{{- with .Router}}
  router     {{.URL}}   (stand-in gorouter; table {{.AdminURL}}/routes, nats {{$.NATS}})
{{- end}}
{{- with .Fileserver}}
  fileserver {{.URL}}   (static {{.URL}}/v1/static/, debug {{.DebugURL}}/metrics, signing key {{$.SigningKey}})
{{- end}}
{{- with .Registry}}
  registry   {{.Plain.URL}}   (plain HTTP, the cells' default registry: docker:///drover/web#v1; access log {{.Plain.AccessLogPath}})
  registry   {{.Auth.URL}}   (TLS with {{$.Certs}}/ca.crt, basic auth {{.Auth.Username}}, password in {{.Auth.PasswordFile}})
{{- end}}
{{- with .RouteEmitter}}
  emitter    {{.Config.ListenAddress}}   (mTLS, debug {{.DebugURL}}/metrics, logs {{.StdoutPath}})
{{- end}}
{{- range .Reps}}
  {{.CellID}}     rep {{.Config.ListenAddress}}  zone {{.Config.Zone}}  host ports {{.Config.Executor.PortRangeStart}}-{{.Config.Executor.PortRangeEnd}}  containerd namespace {{.Config.Executor.ContainerdNamespace}}
{{- end}}

curl:
  curl --cacert {{.Certs}}/ca.crt --cert {{.Certs}}/client.crt --key {{.Certs}}/client.key \
       {{.BBS.HTTPURL}}/v1/desired_lrps
  curl ... -X POST --data @integration/testdata/seed_000_desired_lrp.json {{.BBS.HTTPURL}}/v1/desired_lrps
  curl ... {{.BBS.HTTPURL}}/v1/actual_lrps?process_guid=some-guid
  curl ... -N {{.BBS.HTTPURL}}/v1/events

droverctl (finds {{.Certs}} and {{.BBS.Config.GRPCAddress}} by itself):
  {{.Bin}}/droverctl help
  {{.Bin}}/droverctl desired-lrps
{{- if .Reps}}
  {{.Bin}}/droverctl cell-states
  {{.Bin}}/droverctl desire -f integration/testdata/busybox_httpd_lrp.json && {{.Bin}}/droverctl actual-lrps
  {{.Bin}}/droverctl logs busybox-httpd --follow
{{- end}}
{{- with .Router}}
  {{$.Bin}}/droverctl routes
  curl -H 'Host: busybox-httpd.example.com' {{.URL}}/
{{- end}}
{{- if and .Fileserver .Router}}
  {{.Bin}}/droverctl push examples/static-site --name hello
  curl -H 'Host: hello.example.com' {{.Router.URL}}/
{{- end}}
{{- if and .Registry .Router}}
  {{.Bin}}/droverctl push --docker-image {{.Registry.Plain.Host}}/drover/web:v1 --insecure-registry --name web
  curl -H 'Host: web.example.com' {{.Router.URL}}/
{{- end}}

grpcurl:
  {{.Bin}}/grpcurl -cacert {{.Certs}}/ca.crt -cert {{.Certs}}/client.crt -key {{.Certs}}/client.key \
       {{.BBS.Config.GRPCAddress}} list

Stop everything with: make down
`))

// natsURL is the stack's NATS URL, or "" when it runs none.
func natsURL(s *devstack.Stack) string {
	if s.NATS == nil {
		return ""
	}
	return s.NATS.URL
}

func printWelcome(s *devstack.Stack) {
	rel := func(path string) string {
		if r, err := filepath.Rel(s.Root, path); err == nil && filepath.IsLocal(r) {
			return r
		}
		return path
	}
	welcome.Execute(os.Stdout, map[string]any{
		"Home":         rel(s.Home),
		"BBS":          s.BBS[0],
		"Auctioneer":   s.Auctioneer,
		"Reps":         s.Reps,
		"Converger":    s.Converger,
		"Router":       s.Router,
		"RouteEmitter": s.RouteEmitter,
		"Fileserver":   s.Fileserver,
		"Registry":     s.Registry,
		"SigningKey":   rel(filepath.Join(s.Home, filepath.FromSlash(devstack.SigningKeyFile))),
		"NATS":         natsURL(s),
		"Certs":        rel(s.Certs.Dir),
		"Bin":          rel(s.BinDir),
	})
}
