package devstacktest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"strconv"

	"drover.dev/devstack"
)

// hostPortBlock is the size of a test cell's host port range.
const hostPortBlock = 100

// cellLayouts are n cells for one test: a random stack id names the namespaces
// (drover-t<id>-cell-i) and bridges (drt<id>c<i>), each cell gets a random /24 in
// 10.200.0.0-10.254.255.0 that no host interface uses and a random block of host ports
// in 20000-32767 (below Linux's ephemeral range).
func cellLayouts(n int, ports []int) ([]devstack.CellLayout, error) {
	stackID, err := randomHex(3)
	if err != nil {
		return nil, err
	}
	used, err := hostSubnets()
	if err != nil {
		return nil, err
	}
	blocks := (32767 - 20000 + 1) / hostPortBlock
	first, err := randomInt(blocks)
	if err != nil {
		return nil, err
	}
	var out []devstack.CellLayout
	for i := 1; i <= n; i++ {
		subnet, err := randomSubnet(used)
		if err != nil {
			return nil, err
		}
		used[subnet] = true
		start := 20000 + ((first+i-1)%blocks)*hostPortBlock
		id := "cell-" + strconv.Itoa(i)
		out = append(out, devstack.CellLayout{
			ID:            id,
			Zone:          devstack.CellZone(i),
			Namespace:     "drover-t" + stackID + "-" + id,
			Bridge:        "drt" + stackID + "c" + strconv.Itoa(i),
			Subnet:        subnet,
			ListenPort:    ports[2*(i-1)],
			DebugPort:     ports[2*(i-1)+1],
			HostPortStart: start,
			HostPortEnd:   start + hostPortBlock - 1,
		})
	}
	return out, nil
}

// hostSubnets returns the /24 networks of the host's IPv4 addresses.
func hostSubnets() (map[string]bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("host addresses: %w", err)
	}
	used := map[string]bool{}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok {
			if ip4 := ipnet.IP.To4(); ip4 != nil {
				used[fmt.Sprintf("%d.%d.%d.0/24", ip4[0], ip4[1], ip4[2])] = true
			}
		}
	}
	return used, nil
}

// randomSubnet picks a /24 in 10.200.0.0-10.254.255.0 that is not in used.
func randomSubnet(used map[string]bool) (string, error) {
	for range 100 {
		n, err := randomInt(55 * 256)
		if err != nil {
			return "", err
		}
		subnet := fmt.Sprintf("10.%d.%d.0/24", 200+n/256, n%256)
		if !used[subnet] {
			return subnet, nil
		}
	}
	return "", fmt.Errorf("no free test subnet found")
}

func randomInt(n int) (int, error) {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		return 0, fmt.Errorf("random: %w", err)
	}
	return int(v.Int64()), nil
}

func randomHex(bytes int) (string, error) {
	b := make([]byte, bytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return hex.EncodeToString(b), nil
}
