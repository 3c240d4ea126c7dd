package server

import "sync"

// TakeBackgroundSlotsForTest takes every slot of the side effects' pool, as if that many
// were in flight, until release (which may be called more than once) gives them back.
func (s *Server) TakeBackgroundSlotsForTest() (release func()) {
	for range cap(s.backgroundSem) {
		s.backgroundSem <- struct{}{}
	}
	return sync.OnceFunc(func() {
		for range cap(s.backgroundSem) {
			<-s.backgroundSem
		}
	})
}
