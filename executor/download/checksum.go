package download

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"strings"
)

// checksum is an expected digest: a normalised algorithm name and lower-case hex value.
type checksum struct {
	alg   string
	value string
}

// none reports whether no checksum was asked for.
func (c checksum) none() bool { return c.alg == "" }

// newHashes maps each supported algorithm to its constructor.
var newHashes = map[string]func() hash.Hash{
	"md5":    md5.New,
	"sha1":   sha1.New,
	"sha256": sha256.New,
	"sha512": sha512.New, // image layers may name sha512
}

// parseChecksum validates an algorithm/value pair; both empty means no checksum.
func parseChecksum(alg, value string) (checksum, error) {
	alg, value = strings.ToLower(strings.TrimSpace(alg)), strings.ToLower(strings.TrimSpace(value))
	switch {
	case alg == "" && value == "":
		return checksum{}, nil
	case alg == "":
		return checksum{}, fmt.Errorf("checksum_value is set but checksum_algorithm is empty")
	case value == "":
		return checksum{}, fmt.Errorf("checksum_algorithm %q is set but checksum_value is empty", alg)
	}
	if _, ok := newHashes[alg]; !ok {
		return checksum{}, fmt.Errorf("unsupported checksum_algorithm %q: want md5, sha1, sha256 or sha512", alg)
	}
	return checksum{alg: alg, value: value}, nil
}

// newHash returns a hash for the checksum's algorithm (nil when no checksum is asked for).
func (c checksum) newHash() hash.Hash {
	if c.none() {
		return nil
	}
	return newHashes[c.alg]()
}

// verify compares the computed digest with the expected one; artifactURL names the download.
func (c checksum) verify(got hash.Hash, artifactURL string) error {
	if c.none() {
		return nil
	}
	return c.verifyHex(hexSum(got), artifactURL)
}

// verifyHex compares a computed hex digest with the expected one.
func (c checksum) verifyHex(have, artifactURL string) error {
	if c.none() || have == c.value {
		return nil
	}
	return fmt.Errorf("checksum mismatch for %s: expected %s %s, got %s", displayURL(artifactURL), c.alg, c.value, have)
}
