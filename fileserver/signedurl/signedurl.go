// Package signedurl signs and verifies upload URLs with an HMAC key and an expiry:
// signature = hex(HMAC-SHA256(key, "PUT\n<path>\n<expires>")), carried in the query
// parameters "expires" (unix seconds) and "signature". Whoever holds the key issues URLs;
// ReadKey reads it from its file, for the server and for clients alike.
package signedurl

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"time"
)

// Query parameter names of a signed URL.
const (
	ParamExpires   = "expires"
	ParamSignature = "signature"
)

// Verification errors.
var (
	// ErrMissingSignature: the query lacks "expires" or "signature".
	ErrMissingSignature = errors.New("missing signature")
	// ErrBadSignature: the signature does not match the path and expiry, or is malformed.
	ErrBadSignature = errors.New("invalid signature")
	// ErrExpired: the signature is valid but its expiry has passed.
	ErrExpired = errors.New("signed URL expired")
)

// Sign returns the query parameters that authorise an upload to path until expires.
func Sign(key []byte, path string, expires time.Time) url.Values {
	exp := strconv.FormatInt(expires.Unix(), 10)
	return url.Values{
		ParamExpires:   {exp},
		ParamSignature: {hex.EncodeToString(mac(key, path, exp))},
	}
}

// Verify checks q's signature for path and then its expiry against now. It returns
// nil, ErrMissingSignature, ErrBadSignature or ErrExpired.
func Verify(key []byte, path string, q url.Values, now time.Time) error {
	exp, sig := q.Get(ParamExpires), q.Get(ParamSignature)
	if exp == "" || sig == "" {
		return ErrMissingSignature
	}
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(key, path, exp)) {
		return ErrBadSignature
	}
	expires, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	if now.Unix() > expires {
		return ErrExpired
	}
	return nil
}

// mac is HMAC-SHA256(key, "PUT\n<path>\n<expires>").
func mac(key []byte, path, expires string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("PUT\n" + path + "\n" + expires))
	return h.Sum(nil)
}

// PackagesPath is the URL path of package uploads, signed by their URLs.
const PackagesPath = "/v1/packages"

// BlobPath is the URL path of the blob at key, signed by its upload URLs.
func BlobPath(key string) string { return "/v1/blobs/" + key }
