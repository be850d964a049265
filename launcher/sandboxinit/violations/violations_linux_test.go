package violations

import (
	"strconv"
	"strings"
	"testing"

	"grok-sandbox/launcher/eventlog"
	"grok-sandbox/launcher/seccomp"
)

// A run's violation lines stay within maxBytes, however long what a
// process chose makes them (a program under a path of control bytes, each
// six bytes of JSON); the rest is counted for the summary.
func TestViolationLinesBoundedInBytes(t *testing.T) {
	arch, err := seccomp.HostArch()
	if err != nil {
		t.Skip(err)
	}
	v := New("p", "bwrap", -1, arch)
	exe := "/" + strings.Repeat("\x01", 4000)
	for i := 0; i < maxViolations; i++ {
		v.queueEvent(strconv.Itoa(i), eventlog.Event{Command: "x", Exe: exe, Message: "blocked open of denied path /w/.env (.env)"})
	}
	v.mu.Lock()
	logged, dropped, size := v.logged, v.dropped, v.size
	v.mu.Unlock()
	if size > maxBytes {
		t.Errorf("%d bytes of violation lines queued, over %d", size, maxBytes)
	}
	if logged == 0 || logged+dropped != maxViolations || dropped == 0 {
		t.Errorf("logged %d, counted for the summary %d, of %d", logged, dropped, maxViolations)
	}
	// Ordinary lines are not held to it early: 100 of them all go in.
	w := New("p", "bwrap", -1, arch)
	for i := 0; i < maxViolations; i++ {
		w.queueEvent(strconv.Itoa(i), eventlog.Event{Command: "cat", Exe: "/usr/bin/cat", Message: "blocked open of denied path /w/.env (.env)"})
	}
	if w.logged != maxViolations {
		t.Errorf("ordinary lines: %d logged of %d", w.logged, maxViolations)
	}
}
