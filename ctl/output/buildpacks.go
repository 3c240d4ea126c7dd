package output

import (
	"fmt"

	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
)

// BuildpackTable lists buildpacks: position, name, stack, the first 12 hex digits of
// the archive's sha256, its size and file name.
func BuildpackTable(bps []*stagerv1.Buildpack) *Table {
	t := NewTable("POSITION", "NAME", "STACK", "SHA256", "SIZE", "FILENAME")
	for _, b := range bps {
		t.Add(Int(b.GetPosition()), b.GetName(), b.GetStack(), ShortSHA256(b.GetSha256()), Bytes(b.GetSize()), b.GetFilename())
	}
	return t
}

// BuildpackProperties shows one buildpack.
func BuildpackProperties(b *stagerv1.Buildpack) *Properties {
	p := &Properties{}
	p.Add("name", b.GetName())
	p.Add("stack", b.GetStack())
	p.Add("position", Int(b.GetPosition()))
	p.Add("sha256", b.GetSha256())
	p.Add("size", fmt.Sprintf("%s (%d bytes)", Bytes(b.GetSize()), b.GetSize()))
	p.Add("filename", b.GetFilename())
	p.Add("blob", b.GetBlobKey())
	p.Add("updated", timestampNano(b.GetUpdatedAt()))
	return p
}

// Buildpack is the JSON view of one buildpack; times are RFC 3339.
type Buildpack struct {
	Name      string `json:"name"`
	Stack     string `json:"stack"`
	Position  int32  `json:"position"`
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
	BlobKey   string `json:"blob_key"`
	Filename  string `json:"filename"`
	CreatedAt string `json:"created_at,omitempty"`
	UpdatedAt string `json:"updated_at,omitempty"`
}

// BuildpackView converts a buildpack for JSON output.
func BuildpackView(b *stagerv1.Buildpack) Buildpack {
	return Buildpack{
		Name: b.GetName(), Stack: b.GetStack(), Position: b.GetPosition(), SHA256: b.GetSha256(), Size: b.GetSize(),
		BlobKey: b.GetBlobKey(), Filename: b.GetFilename(),
		CreatedAt: timestampNano(b.GetCreatedAt()), UpdatedAt: timestampNano(b.GetUpdatedAt()),
	}
}

// ShortSHA256 is the first 12 hex digits of a checksum, or Empty.
func ShortSHA256(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// Bytes renders a byte count as "512B", "1.2K", "3.4M" or "1.0G".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	value, suffix := float64(n)/unit, "K"
	for _, next := range []string{"M", "G", "T"} {
		if value < unit {
			break
		}
		value, suffix = value/unit, next
	}
	return fmt.Sprintf("%.1f%s", value, suffix)
}
