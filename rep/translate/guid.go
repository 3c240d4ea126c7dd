package translate

import (
	"crypto/rand"
	"encoding/hex"
)

// InstanceGuidLength is the length of an instance guid: a UUIDv4 without dashes, cut
// to 28 characters as upstream does.
const InstanceGuidLength = 28

// NewInstanceGuid returns a fresh random instance guid (lower-case hex).
func NewInstanceGuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return hex.EncodeToString(b[:])[:InstanceGuidLength]
}
