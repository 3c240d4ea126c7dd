package staging

import (
	"encoding/hex"
	"strings"

	"drover.dev/lib/authz"
)

// appGUIDPartLen is how much of the app guid a task guid keeps.
const appGUIDPartLen = 40

// TaskGUID names a staging task: "staging-", up to 40 characters of the app guid (its
// characters outside [A-Za-z0-9_-] turned into "-", as BBS task guids allow no
// others), "-" and random as hex. random should be 8 bytes from a CSPRNG.
func TaskGUID(appGUID string, random []byte) string {
	part := appGUID
	if len(part) > appGUIDPartLen {
		part = part[:appGUIDPartLen]
	}
	part = strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, part)
	return authz.StagingTaskPrefix + part + "-" + hex.EncodeToString(random)
}
