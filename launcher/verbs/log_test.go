package verbs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"grok-sandbox/launcher/eventlog"
)

// syncBuffer is a bytes.Buffer safe for the follower and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until out holds want (the follower polls the log), or
// fails after a generous bound.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output:\n%s", want, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// --follow prints what launches append, across a rotation (in place: the
// log's contents move to .1 and the log is emptied), losing nothing that
// was appended just before it, printing nothing twice.
func TestLogFollowAcrossRotation(t *testing.T) {
	gh := t.TempDir()
	t.Setenv("GROK_HOME", gh)
	t.Setenv("NO_COLOR", "1")
	ev := func(msg string) eventlog.Event {
		return eventlog.Event{Time: eventlog.Now(), Event: "degraded", Profile: "p", Message: msg}
	}
	if err := eventlog.Append(gh, ev("before the follower")); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- Log(LogOptions{Follow: true, Stop: stop}, out) }()
	waitFor(t, out, "before the follower")
	if err := eventlog.Append(gh, ev("first-new")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "first-new")
	// About 1.2 MiB of lines at once: the log rotates once while they are
	// written, and what the follower had not read yet is in .1 by then.
	pad := strings.Repeat("x", 10<<10)
	for i := range 120 {
		if err := eventlog.Append(gh, ev(fmt.Sprintf("line-%03d %s", i, pad))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, out, "line-119")
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	wants := []string{"before the follower", "first-new"}
	for i := range 120 {
		wants = append(wants, fmt.Sprintf("line-%03d ", i))
	}
	for _, want := range wants {
		if n := strings.Count(got, want); n != 1 {
			t.Errorf("%q printed %d times", want, n)
		}
	}
	if strings.Contains(got, "unreadable") {
		t.Errorf("an unreadable line:\n%.2000s", got)
	}
	if _, err := os.Stat(filepath.Join(gh, eventlog.Name+".1")); err != nil {
		t.Fatalf("the log never rotated: %v", err)
	}
}
