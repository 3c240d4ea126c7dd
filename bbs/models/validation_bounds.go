package models

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// cleanedFields are the string fields that may hold NUL: file contents, which are
// opaque, and the reasons cells and the converger report, which the store cleans and
// cuts (TruncateReason) rather than refusing the report they are part of.
var cleanedFields = map[protoreflect.FullName]bool{
	"drover.models.v1.File.content":                               true,
	"drover.bbs.v1.CrashActualLRPRequest.error_message":           true,
	"drover.bbs.v1.EvacuateCrashedActualLRPRequest.error_message": true,
	"drover.bbs.v1.FailActualLRPRequest.error_message":            true,
	"drover.bbs.v1.FailTaskRequest.failure_reason":                true,
	"drover.bbs.v1.RejectTaskRequest.rejection_reason":            true,
	"drover.bbs.v1.CompleteTaskRequest.failure_reason":            true,
	"drover.bbs.v1.FailTaskAction.failure_reason":                 true,
	"drover.bbs.v1.LRPAction.reason":                              true,
	"drover.bbs.v1.TaskAction.reason":                             true,
}

// opaquePackage holds the well-known types (google.protobuf.Value for routes); their
// contents are checked by the rules of the fields that hold them.
const opaquePackage = "google.protobuf"

// stringBounds is the rule every request obeys whatever its type: every string is at
// most MaxStringLength bytes without NUL (except cleanedFields), every map key is an
// identifier, and messages nest at most MaxMessageDepth levels. m is depth levels deep
// and its fields are named under prefix. Fields a specific rule already refused are
// not reported again.
func (v *violations) stringBounds(prefix string, m protoreflect.Message, depth int) {
	if depth > MaxMessageDepth {
		v.addf(orName(prefix, "request"), "must nest at most %d messages deep", MaxMessageDepth)
		return
	}
	if strings.HasPrefix(string(m.Descriptor().FullName()), opaquePackage+".") {
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, value protoreflect.Value) bool {
		path := field(prefix, fd.TextName())
		switch {
		case fd.IsMap():
			value.Map().Range(func(key protoreflect.MapKey, value protoreflect.Value) bool {
				p := entry(path, key.String())
				if fd.MapKey().Kind() == protoreflect.StringKind && !v.reported(p) {
					v.mapKey(p, key.String())
				}
				v.boundValue(p, fd.MapValue(), value, depth)
				return true
			})
		case fd.IsList():
			list := value.List()
			for i := range list.Len() {
				v.boundValue(item(path, i), fd, list.Get(i), depth)
			}
		default:
			v.boundValue(path, fd, value, depth)
		}
		return true
	})
}

// boundValue checks one string or descends into one message of field fd.
func (v *violations) boundValue(path string, fd protoreflect.FieldDescriptor, value protoreflect.Value, depth int) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if v.reported(path) {
			return
		}
		s := value.String()
		switch {
		case len(s) > MaxStringLength:
			v.addf(path, "must be at most %d bytes", MaxStringLength)
		case !cleanedFields[fd.FullName()] && strings.ContainsRune(s, 0):
			v.add(path, "must not contain NUL characters")
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		v.stringBounds(path, value.Message(), depth+1)
	}
}

// mapKey checks a map key, which names something (a metric tag, a router, a network
// property, an annotation): it is an identifier.
func (v *violations) mapKey(path, key string) {
	if len(key) > MaxIdentifierLength {
		v.addf(path, "key must be at most %d bytes", MaxIdentifierLength)
		return
	}
	if controlCharAt(key) >= 0 {
		v.add(path, "key must not contain control characters")
	}
}
