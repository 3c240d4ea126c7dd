package runner

import "sync"

// forEach calls fn(i) for i in [0, n) on at most workers goroutines and waits.
func forEach(n, workers int, fn func(i int)) {
	workers = max(1, min(workers, n))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
