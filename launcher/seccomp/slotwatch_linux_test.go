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

// A call that stops waiting takes none of the others' turns away: every
// call not looked at yet in a round is looked at before any is looked at
// again, whichever calls leave meanwhile.
func TestSlotWatchRemoveKeepsTurns(t *testing.T) {
	var s slotWatch
	s.running = true // no goroutine: the test takes the turns
	const n = 2*slotLooks + 3
	ws := make([]*slotWaiter, n)
	for i := range ws {
		ws[i] = &slotWaiter{tid: i}
		s.waiters = append(s.waiters, ws[i])
	}
	round := map[*slotWaiter]bool{}
	for _, w := range s.batch(nil) {
		round[w] = true
	}
	// One looked at this round leaves, and one not looked at yet.
	gone := map[*slotWaiter]bool{ws[3]: true, ws[slotLooks+1]: true}
	for w := range gone {
		s.remove(w)
		delete(round, w)
	}
	for turns := 0; len(round) < n-len(gone); turns++ {
		if turns > 3 {
			t.Fatalf("after %d turns only %d of %d calls looked at this round", turns, len(round), n-len(gone))
		}
		for _, w := range s.batch(nil) {
			if gone[w] {
				t.Fatalf("a call that left (tid %d) looked at", w.tid)
			}
			if round[w] && len(round) < n-len(gone) {
				t.Fatalf("tid %d looked at again with %d calls of the round not looked at yet", w.tid, n-len(gone)-len(round))
			}
			round[w] = true
		}
	}
}
