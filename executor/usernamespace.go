package executor

import (
	"errors"
	"fmt"
	"math"
)

// MinUserNamespaceSize is the smallest id range a cell's user namespace may map: every
// id a rootfs may use (0..65535, nobody at 65534) must have a host id.
const MinUserNamespaceSize = 65536

// UserNamespace is the id range a cell gives its unprivileged containers: container
// uids 0..Size-1 are host uids HostUID..HostUID+Size-1, and gids likewise from HostGID,
// so root in such a container is an unprivileged host user. Privileged containers keep
// the host's ids. A nil *UserNamespace in a config means no user namespaces.
type UserNamespace struct {
	HostUID int64 `json:"host_uid"`
	HostGID int64 `json:"host_gid"`
	Size    int64 `json:"size"`
}

// Validate checks the range; errors name field+".host_uid" and the like.
func (u UserNamespace) Validate(field string) error {
	var errs []error
	bad := func(name, rule string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", field, name, fmt.Sprintf(rule, args...)))
	}
	if u.HostUID <= 0 {
		bad("host_uid", "must be greater than 0 (host root cannot be mapped), got %d", u.HostUID)
	}
	if u.HostGID <= 0 {
		bad("host_gid", "must be greater than 0 (host root cannot be mapped), got %d", u.HostGID)
	}
	if u.Size < MinUserNamespaceSize {
		bad("size", "must be at least %d, got %d", MinUserNamespaceSize, u.Size)
	}
	if u.HostUID > 0 && u.Size > 0 && u.HostUID+u.Size > math.MaxUint32 {
		bad("host_uid", "host_uid+size must be at most %d, got %d", uint32(math.MaxUint32), u.HostUID+u.Size)
	}
	if u.HostGID > 0 && u.Size > 0 && u.HostGID+u.Size > math.MaxUint32 {
		bad("host_gid", "host_gid+size must be at most %d, got %d", uint32(math.MaxUint32), u.HostGID+u.Size)
	}
	return errors.Join(errs...)
}
