package models_test

import (
	"strings"
	"testing"

	"drover.dev/bbs/models"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	"github.com/stretchr/testify/require"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// dockerRootfsRules are malformed docker rootfs URLs and the rule each breaks, as the
// error names it. Every rule of lib/dockerref that a client can meet is here.
var dockerRootfsRules = []struct{ rootfs, rule string }{
	{"docker://", "nothing after docker://"},
	{"docker:user/image", "docker: must be followed by //"},
	{"docker:/user/image", "docker: must be followed by //"},
	{"DOCKER:///user/image", "scheme must be lowercase docker:"},
	{"docker:///", "the repository is empty"},
	{"docker://registry.example", "the repository is empty"},
	{"docker:///user/image?tag=v1", "a query string (?) is not allowed"},
	{"docker://alice:secret@registry.example/user/image", "credentials in the URL (user@host) are not allowed"},
	{"docker://bad_host/user/image", "the registry host must be HOST[:PORT]"},
	{"docker://registry.example:http/user/image", "the registry host must be HOST[:PORT]"},
	{"docker:///User/Image", "the repository must be lowercase"},
	{"docker:///user//image", "with no empty component"},
	{"docker:///user/image/", "with no empty component"},
	{"docker:///" + strings.Repeat("a", 256), "the repository is longer than 255 characters"},
	{"docker:///user/image#", "the tag after # is empty"},
	{"docker:///user/image#v1#v2", "only one # (the tag) is allowed"},
	{"docker:///user/image#" + testDigest, "a digest goes in the path"},
	{"docker:///user/image#v1+build", "the tag must be 1 to 128 characters"},
	{"docker:///user/image:-v1", "the tag must be 1 to 128 characters"},
	{"docker:///user/image#" + strings.Repeat("t", 129), "the tag must be 1 to 128 characters"},
	{"docker:///user/image:v1#v2", "the tag is given twice"},
	{"docker:///user/image@sha256:abc", "the digest must be sha256:<64 lowercase hex>"},
	{"docker:///user/image@md5:0123456789abcdef0123456789abcdef", "the digest must be sha256:<64 lowercase hex>"},
	{"docker:///user/image@" + strings.ToUpper(testDigest), "the digest must be sha256:<64 lowercase hex>"},
	{"docker:///user image", "only printable ASCII characters without spaces"},
	{"docker:///" + strings.Repeat("a/", 600) + "a", "longer than 1024 bytes"},
}

func TestDockerRootfsRulesRefuseDesiredLRPsAndTasks(t *testing.T) {
	for _, tc := range dockerRootfsRules {
		t.Run(tc.rootfs[:min(len(tc.rootfs), 60)], func(t *testing.T) {
			const prefix = "invalid field rootfs: must be a docker image URL: "

			lrp := fullDesiredLRP(t)
			lrp.Rootfs = tc.rootfs
			requireInvalid(t, models.ValidateDesiredLRP(lrp), prefix, tc.rule)

			def := validTaskDefinition()
			def.Rootfs = tc.rootfs
			requireInvalid(t, models.ValidateTaskDefinition(def), prefix, tc.rule)

			req := &bbsv1.DesireTaskRequest{TaskGuid: "t", Domain: "d", TaskDefinition: validTaskDefinition()}
			req.TaskDefinition.Rootfs = tc.rootfs
			requireInvalid(t, models.ValidateRequest(req), "invalid field task_definition."+prefix[len("invalid field "):], tc.rule)
		})
	}
}

func TestDockerRootfsErrorNeverRepeatsCredentials(t *testing.T) {
	lrp := fullDesiredLRP(t)
	lrp.Rootfs = "docker://alice:s3cr3t-pw@registry.example/user/image"
	err := models.ValidateDesiredLRP(lrp)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cr3t-pw")
}

func TestDockerRootfsAccepted(t *testing.T) {
	for _, rootfs := range []string{
		"docker:///user/image#tag",
		"docker:///user/image",
		"docker:///busybox:1.36",
		"docker://registry.host:5000/user/image#tag",
		"docker://127.0.0.1:5000/drover/web#v1",
		"docker://127.0.0.1:5000/drover/web@" + testDigest,
		"docker://[::1]:5000/drover/web:v1@" + testDigest,
		"preloaded:busybox",
	} {
		lrp := fullDesiredLRP(t)
		lrp.Rootfs = rootfs
		require.NoError(t, models.ValidateDesiredLRP(lrp), rootfs)
		def := validTaskDefinition()
		def.Rootfs = rootfs
		require.NoError(t, models.ValidateTaskDefinition(def), rootfs)
	}
}
