package containerd

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/sys/user"
)

// containerUser is a user resolved against a rootfs.
type containerUser struct {
	UID, GID       uint32
	AdditionalGIDs []uint32
	Name, Home     string
}

// resolveUser finds spec ("" means root; a name, "uid" or "user:group" with the group
// given by name or gid) in the passwd and group files of a rootfs; a nil reader is an
// empty file. Unknown names are an error; unknown numeric ids are allowed, and an unknown
// uid is also its own gid. A user with a name gets the other groups that list it as
// additional groups. The first matching entry wins; comment lines and entries with ids
// outside uint32 are skipped, and an id that is missing or not a number reads as 0 (as in
// runc and containerd, which parse with the same library).
func resolveUser(spec string, passwd, group io.Reader) (containerUser, error) {
	if spec == "" {
		spec = "root"
	}
	name, groupPart, hasGroup := strings.Cut(spec, ":")
	uid, numeric := parseID(name)
	if name == "root" {
		uid, numeric = 0, true
	}
	users, err := parsePasswd(passwd, func(u user.User) bool {
		return u.Name == name || (numeric && u.Uid == int(uid))
	})
	if err != nil {
		return containerUser{}, fmt.Errorf("read /etc/passwd: %w", err)
	}
	var u containerUser
	switch {
	case len(users) > 0:
		e := users[0]
		u = containerUser{UID: uint32(e.Uid), GID: uint32(e.Gid), Name: e.Name, Home: e.Home}
	case numeric:
		u = containerUser{UID: uid, GID: uid, Home: "/"}
		if uid == 0 {
			u.Name, u.Home = "root", "/root"
		}
	default:
		return containerUser{}, fmt.Errorf("user %q: not found in the rootfs /etc/passwd", name)
	}
	groups, err := parseGroup(group, func(g user.Group) bool {
		return (hasGroup && g.Name == groupPart) || (u.Name != "" && slices.Contains(g.List, u.Name))
	})
	if err != nil {
		return containerUser{}, fmt.Errorf("read /etc/group: %w", err)
	}
	if hasGroup {
		gid, ok := parseID(groupPart)
		if !ok {
			i := slices.IndexFunc(groups, func(g user.Group) bool { return g.Name == groupPart })
			if i < 0 {
				return containerUser{}, fmt.Errorf("group %q: not found in the rootfs /etc/group", groupPart)
			}
			gid = uint32(groups[i].Gid)
		}
		u.GID = gid
	}
	if u.Name != "" {
		for _, g := range groups {
			if gid := uint32(g.Gid); gid != u.GID && slices.Contains(g.List, u.Name) {
				u.AdditionalGIDs = append(u.AdditionalGIDs, gid)
			}
		}
	}
	return u, nil
}

// parsePasswd lists the entries of passwd that keep keeps, skipping comment lines and
// ids outside uint32; a nil reader has none.
func parsePasswd(passwd io.Reader, keep func(user.User) bool) ([]user.User, error) {
	if passwd == nil {
		return nil, nil
	}
	return user.ParsePasswdFilter(passwd, func(u user.User) bool {
		return !strings.HasPrefix(u.Name, "#") && validID(u.Uid) && validID(u.Gid) && keep(u)
	})
}

// parseGroup lists the entries of group that keep keeps, skipping ids outside uint32; a
// nil reader has none.
func parseGroup(group io.Reader, keep func(user.Group) bool) ([]user.Group, error) {
	if group == nil {
		return nil, nil
	}
	return user.ParseGroupFilter(group, func(g user.Group) bool {
		return validID(g.Gid) && keep(g)
	})
}

func validID(id int) bool { return id >= 0 && id <= math.MaxUint32 }

func parseID(s string) (uint32, bool) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil
}
