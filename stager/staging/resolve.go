package staging

import (
	"fmt"
	"sort"
)

// Buildpack is a registered buildpack of a stack.
type Buildpack struct {
	Name     string
	Stack    string
	Position int
	SHA256   string
	Size     int64
	BlobKey  string
	Filename string
}

// Resolve picks the buildpacks to offer the builder: the requested names (each must be
// registered for stack, in the order given) or, when none are named, every buildpack of
// stack by position. skipDetect is true when names were given.
func Resolve(requested []string, registered []Buildpack, stack string) (bps []Buildpack, skipDetect bool, err error) {
	var ofStack []Buildpack
	byName := map[string]Buildpack{}
	for _, b := range registered {
		if b.Stack == stack {
			ofStack = append(ofStack, b)
			byName[b.Name] = b
		}
	}
	if len(requested) == 0 {
		if len(ofStack) == 0 {
			return nil, false, fmt.Errorf("no buildpacks are registered for stack %q", stack)
		}
		sort.SliceStable(ofStack, func(i, j int) bool { return ofStack[i].Position < ofStack[j].Position })
		return ofStack, false, nil
	}
	for _, name := range requested {
		b, ok := byName[name]
		if !ok {
			return nil, true, fmt.Errorf("buildpack %q is not registered for stack %q", name, stack)
		}
		bps = append(bps, b)
	}
	return bps, true, nil
}

// Names are the buildpacks' names in order.
func Names(bps []Buildpack) []string {
	names := make([]string, len(bps))
	for i, b := range bps {
		names[i] = b.Name
	}
	return names
}
