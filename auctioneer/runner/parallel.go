package runner

import "golang.org/x/sync/errgroup"

// forEach calls fn(i) for i in [0, n) on at most workers goroutines at a time (at least
// one) and waits for every call.
func forEach(n, workers int, fn func(i int)) {
	var g errgroup.Group
	g.SetLimit(max(1, workers))
	for i := range n {
		g.Go(func() error {
			fn(i)
			return nil
		})
	}
	_ = g.Wait() // fn reports nothing
}
