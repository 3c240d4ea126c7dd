package output

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSONLine writes v as one line of compact JSON, HTML characters unescaped.
func WriteJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}
