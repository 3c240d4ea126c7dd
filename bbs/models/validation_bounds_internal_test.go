package models

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "drover.dev/proto/gen/drover/bbs/v1"
)

// TestCleanedFieldsExist keeps the NUL exemptions pointing at real string fields: a
// renamed field would otherwise lose its exemption silently.
func TestCleanedFieldsExist(t *testing.T) {
	for name := range cleanedFields {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
		require.NoError(t, err, name)
		fd, ok := d.(protoreflect.FieldDescriptor)
		require.True(t, ok, "%s is a field", name)
		require.Equal(t, protoreflect.StringKind, fd.Kind(), name)
	}
}
