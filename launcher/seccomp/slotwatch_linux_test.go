//go:build linux && (amd64 || arm64)

package seccomp

import "testing"

// The watch over calls waiting for a place looks at no more than
// slotLooks of them a turn, and at every one of them in turn.
func TestSlotWatchBatchBounded(t *testing.T) {
	var s slotWatch
	s.running = true // no goroutine: the test takes the turns
	const n = 2*slotLooks + 3
	ws := make([]*slotWaiter, n)
	for i := range ws {
		ws[i] = &slotWaiter{tid: i}
		s.waiters = append(s.waiters, ws[i])
	}
	seen := map[*slotWaiter]int{}
	turns := 0
	for len(seen) < n {
		b := s.batch(nil)
		if len(b) != slotLooks {
			t.Fatalf("turn %d looks at %d calls, want %d", turns, len(b), slotLooks)
		}
		for _, w := range b {
			seen[w]++
		}
		if turns++; turns > 3 {
			t.Fatalf("after %d turns only %d of %d calls looked at", turns, len(seen), n)
		}
	}
	for _, w := range ws[:5] {
		s.remove(w)
	}
	if b := s.batch(nil); len(b) != slotLooks || !s.running {
		t.Fatalf("after removing 5: a turn looks at %d, running %v", len(b), s.running)
	}
	for _, w := range ws[5:] {
		s.remove(w)
	}
	if b := s.batch(nil); len(b) != 0 || s.running {
		t.Fatalf("with none waiting: a turn looks at %d, running %v; want 0, stopped", len(b), s.running)
	}
}
