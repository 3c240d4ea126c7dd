package containerd

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// containerUser is a user resolved against a rootfs.
type containerUser struct {
	UID, GID       uint32
	AdditionalGIDs []uint32
	Name, Home     string
}

// resolveUser finds user ("" means root; a name, "uid" or "uid:gid") in the passwd and
// group files of a rootfs. Unknown names are an error; unknown numeric ids are allowed.
func resolveUser(user string, passwd, group io.Reader) (containerUser, error) {
	if user == "" {
		user = "root"
	}
	name, groupPart, hasGroup := strings.Cut(user, ":")
	entries, err := parseColonFile(passwd, 7)
	if err != nil {
		return containerUser{}, fmt.Errorf("read /etc/passwd: %w", err)
	}
	var u containerUser
	found := false
	uid, numeric := parseID(name)
	if name == "root" {
		uid, numeric = 0, true
	}
	for _, e := range entries {
		eUID, ok1 := parseID(e[2])
		eGID, ok2 := parseID(e[3])
		if !ok1 || !ok2 {
			continue
		}
		if e[0] == name || (numeric && eUID == uid) {
			u = containerUser{UID: eUID, GID: eGID, Name: e[0], Home: e[5]}
			found = true
			break
		}
	}
	switch {
	case found:
	case numeric:
		u = containerUser{UID: uid, GID: uid, Home: "/"}
		if uid == 0 {
			u.Name, u.Home = "root", "/root"
		}
	default:
		return containerUser{}, fmt.Errorf("user %q: not found in the rootfs /etc/passwd", name)
	}
	groups, err := parseColonFile(group, 4)
	if err != nil {
		return containerUser{}, fmt.Errorf("read /etc/group: %w", err)
	}
	if hasGroup {
		gid, ok := parseID(groupPart)
		if !ok {
			gid, ok = lookupGroup(groups, groupPart)
			if !ok {
				return containerUser{}, fmt.Errorf("group %q: not found in the rootfs /etc/group", groupPart)
			}
		}
		u.GID = gid
	}
	if u.Name != "" {
		for _, g := range groups {
			gid, ok := parseID(g[2])
			if !ok || gid == u.GID {
				continue
			}
			for _, member := range strings.Split(g[3], ",") {
				if member == u.Name {
					u.AdditionalGIDs = append(u.AdditionalGIDs, gid)
				}
			}
		}
	}
	return u, nil
}

func lookupGroup(groups [][]string, name string) (uint32, bool) {
	for _, g := range groups {
		if g[0] == name {
			return parseID(g[2])
		}
	}
	return 0, false
}

func parseID(s string) (uint32, bool) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil
}

// parseColonFile reads /etc/passwd-style lines, padding each to n fields; a nil reader
// is an empty file.
func parseColonFile(r io.Reader, n int) ([][]string, error) {
	if r == nil {
		return nil, nil
	}
	var out [][]string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, ":")
		for len(fields) < n {
			fields = append(fields, "")
		}
		out = append(out, fields)
	}
	return out, sc.Err()
}
