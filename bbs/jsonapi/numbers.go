package jsonapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// protojson reads a number given as a string ("instances": "3") and writes 64-bit
// integers as strings, as the proto3 JSON mapping allows. The LRP API, like Diego's,
// types its numbers: the decoder refuses quoted numbers and the encoder writes every
// integer as a JSON number. Both walk the JSON alongside the message's descriptor.

// opaquePackage holds the well-known types (google.protobuf.Value for routes), whose
// JSON is not that of a message's fields.
const opaquePackage = "google.protobuf."

// numberVisitor sees the JSON value of every number field (path, the field's kind and
// the value) and returns the value to keep in its place.
type numberVisitor func(path string, kind protoreflect.Kind, value any) any

// visitNumbers calls visit for every number field of obj, the JSON object of a message
// of type md whose fields are named under prefix. Keys that are no field of md are
// skipped (protojson reports them).
func visitNumbers(prefix string, md protoreflect.MessageDescriptor, obj map[string]any, visit numberVisitor) {
	if strings.HasPrefix(string(md.FullName()), opaquePackage) {
		return
	}
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		fd := md.Fields().ByName(protoreflect.Name(key))
		if fd == nil {
			fd = md.Fields().ByJSONName(key)
		}
		if fd == nil || obj[key] == nil {
			continue
		}
		path := fieldPath(prefix, fd.TextName())
		switch raw := obj[key]; {
		case fd.IsMap():
			entries, _ := raw.(map[string]any)
			for _, k := range slices.Sorted(maps.Keys(entries)) {
				entries[k] = visitValue(path+"["+k+"]", fd.MapValue(), entries[k], visit)
			}
		case fd.IsList():
			items, _ := raw.([]any)
			for i := range items {
				items[i] = visitValue(path+"["+strconv.Itoa(i)+"]", fd, items[i], visit)
			}
		default:
			obj[key] = visitValue(path, fd, raw, visit)
		}
	}
}

// visitValue visits one value of field fd: a number, or a message to descend into.
func visitValue(path string, fd protoreflect.FieldDescriptor, value any, visit numberVisitor) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if obj, ok := value.(map[string]any); ok {
			visitNumbers(path, fd.Message(), obj, visit)
		}
		return value
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.StringKind, protoreflect.BytesKind:
		return value
	default:
		return visit(path, fd.Kind(), value)
	}
}

// quotedNumbers names every number field of the JSON object data (a message of type md)
// that is given as a string.
func quotedNumbers(data []byte, md protoreflect.MessageDescriptor) ([]string, error) {
	obj, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	var bad []string
	visitNumbers("", md, obj, func(path string, _ protoreflect.Kind, value any) any {
		if _, quoted := value.(string); quoted {
			bad = append(bad, "invalid field "+path+": must be a JSON number, not a string")
		}
		return value
	})
	return bad, nil
}

// unquoteIntegers rewrites the protojson encoding of a message of type md so that its
// 64-bit integers are JSON numbers.
func unquoteIntegers(data []byte, md protoreflect.MessageDescriptor) (json.RawMessage, error) {
	obj, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	visitNumbers("", md, obj, func(_ string, kind protoreflect.Kind, value any) any {
		s, quoted := value.(string)
		if quoted && is64BitInteger(kind) {
			if _, err := strconv.ParseInt(s, 10, 64); err == nil {
				return json.Number(s)
			}
			if _, err := strconv.ParseUint(s, 10, 64); err == nil {
				return json.Number(s)
			}
		}
		return value
	})
	out, err := compactJSON(obj)
	if err != nil {
		return nil, fmt.Errorf("re-encoding %s JSON: %w", md.FullName(), err)
	}
	return out, nil
}

// compactJSON encodes v as compact JSON, leaving <, > and & as they are.
func compactJSON(v any) (json.RawMessage, error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(out.Bytes(), "\n"), nil
}

// is64BitInteger reports the kinds protojson writes as strings.
func is64BitInteger(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return true
	}
	return false
}

// decodeObject decodes a JSON object, keeping numbers as written.
func decodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// fieldPath joins a parent path and a field name as validation names fields.
func fieldPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// nestingExceeds returns the offset in data where arrays and objects first nest deeper
// than limit, or -1. Brackets inside strings do not count.
func nestingExceeds(data []byte, limit int) int {
	depth, inString, escaped := 0, false, false
	for i, c := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > limit {
				return i
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return -1
}
