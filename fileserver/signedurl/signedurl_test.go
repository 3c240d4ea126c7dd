package signedurl

import (
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestVerify(t *testing.T) {
	key := []byte("0123456789abcdef-key")
	now := time.Unix(1_700_000_000, 0)
	good := Sign(key, "/v1/blobs/droplets/a.tgz", now.Add(time.Minute))
	with := func(name, value string) url.Values {
		q := url.Values{}
		for k, v := range good {
			q[k] = append([]string(nil), v...)
		}
		q.Set(name, value)
		return q
	}
	tests := []struct {
		name string
		key  []byte
		path string
		q    url.Values
		now  time.Time
		want error
	}{
		{"valid", key, "/v1/blobs/droplets/a.tgz", good, now, nil},
		{"valid at the expiry second", key, "/v1/blobs/droplets/a.tgz", good, now.Add(time.Minute), nil},
		{"tampered path", key, "/v1/blobs/droplets/b.tgz", good, now, ErrBadSignature},
		{"tampered expiry", key, "/v1/blobs/droplets/a.tgz", with(ParamExpires, "9999999999"), now, ErrBadSignature},
		{"wrong key", []byte("another-key-0123456789"), "/v1/blobs/droplets/a.tgz", good, now, ErrBadSignature},
		{"expired", key, "/v1/blobs/droplets/a.tgz", good, now.Add(time.Minute + time.Second), ErrExpired},
		{"missing signature", key, "/v1/blobs/droplets/a.tgz", url.Values{ParamExpires: good[ParamExpires]}, now, ErrMissingSignature},
		{"missing expiry", key, "/v1/blobs/droplets/a.tgz", url.Values{ParamSignature: good[ParamSignature]}, now, ErrMissingSignature},
		{"empty query", key, "/v1/blobs/droplets/a.tgz", nil, now, ErrMissingSignature},
		{"signature not hex", key, "/v1/blobs/droplets/a.tgz", with(ParamSignature, "zz"), now, ErrBadSignature},
		{"expiry not a number", key, "/v1/blobs/droplets/a.tgz", url.Values{ParamExpires: {"soon"}, ParamSignature: {hex.EncodeToString(mac(key, "/v1/blobs/droplets/a.tgz", "soon"))}}, now, ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, Verify(tt.key, tt.path, tt.q, tt.now), tt.want)
		})
	}
}
