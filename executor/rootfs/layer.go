// Package rootfs builds the cell's preloaded busybox image: an OCI image layout tarball
// made from Debian's busybox-static, which containerd imports without a registry.
package rootfs

import (
	"archive/tar"
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"
)

// fixedTime is the modification time of everything in the image, so builds are
// reproducible.
var fixedTime = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// vcapID is the uid and gid of the vcap user that apps run as.
const vcapID = 2000

// node is one entry of the layer.
type node struct {
	name     string
	typeflag byte
	mode     int64
	uid, gid int
	body     []byte
	link     string
}

// Files of /etc in the layer.
const (
	etcPasswd = "root:x:0:0:root:/root:/bin/sh\n" +
		"vcap:x:2000:2000:vcap:/home/vcap:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	etcGroup = "root:x:0:\n" +
		"vcap:x:2000:\n" +
		"nogroup:x:65534:\n"
	etcHosts = "127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n"
)

// layerNodes lists the layer's entries in the order they are written: the directory
// skeleton, /bin/busybox with one symlink per applet, merged-usr style links so that
// /usr/bin/env, /sbin/ifconfig and friends resolve, and the files of /etc.
func layerNodes(busybox []byte, applets []string) ([]node, error) {
	dir := func(name string, mode int64) node { return node{name: name + "/", typeflag: tar.TypeDir, mode: mode} }
	symlink := func(name, target string) node {
		return node{name: name, typeflag: tar.TypeSymlink, mode: 0o777, link: target}
	}
	regular := func(name string, mode int64, body string) node {
		return node{name: name, typeflag: tar.TypeReg, mode: mode, body: []byte(body)}
	}
	home := dir("home/vcap", 0o755)
	home.uid, home.gid = vcapID, vcapID
	nodes := []node{
		dir("bin", 0o755), dir("dev", 0o755), dir("etc", 0o755), dir("home", 0o755), home,
		dir("proc", 0o555), dir("root", 0o700), dir("sys", 0o555), dir("tmp", 0o1777),
		dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755),
		dir("var", 0o755), dir("var/tmp", 0o1777), dir("var/www", 0o755),
		symlink("sbin", "bin"), symlink("usr/bin", "../bin"), symlink("usr/sbin", "../bin"),
		{name: "bin/busybox", typeflag: tar.TypeReg, mode: 0o755, body: busybox},
	}
	sorted := append([]string(nil), applets...)
	sort.Strings(sorted)
	for i, a := range sorted {
		if a == "" || a == "." || a == ".." || strings.ContainsAny(a, "/\x00") {
			return nil, fmt.Errorf("invalid busybox applet name %q", a)
		}
		if a == "busybox" || (i > 0 && sorted[i-1] == a) {
			continue
		}
		nodes = append(nodes, symlink("bin/"+a, "busybox"))
	}
	return append(nodes,
		regular("etc/passwd", 0o644, etcPasswd),
		regular("etc/group", 0o644, etcGroup),
		regular("etc/hosts", 0o644, etcHosts),
		regular("etc/resolv.conf", 0o644, ""),
	), nil
}

// writeTar writes nodes as an uncompressed tar with fixed times and no owner names.
func writeTar(nodes []node) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range nodes {
		hdr := &tar.Header{
			Name:     n.name,
			Typeflag: n.typeflag,
			Mode:     n.mode,
			Uid:      n.uid,
			Gid:      n.gid,
			Size:     int64(len(n.body)),
			Linkname: n.link,
			ModTime:  fixedTime,
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing %s: %w", n.name, err)
		}
		if _, err := tw.Write(n.body); err != nil {
			return nil, fmt.Errorf("writing %s: %w", n.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
