package violations

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"grok-sandbox/launcher/eventlog"
	"grok-sandbox/launcher/seccomp"
)

func newTestLog(t *testing.T) *Log {
	arch, err := seccomp.HostArch()
	if err != nil {
		t.Skip(err)
	}
	return New("p", "bwrap", -1, arch)
}

// What a process chooses (its program's path, an address) is cut, so 100
// lines of it all fit; a path a line must carry whole (a mask's) counts
// against the run's byte bound, and the summary names that bound.
func TestViolationLinesBounded(t *testing.T) {
	v := newTestLog(t)
	exe := "/" + strings.Repeat("\x01", 4000)
	for i := 0; i < maxViolations; i++ {
		v.queueEvent(strconv.Itoa(i), eventlog.Event{Command: "x", Exe: exe, Address: exe, Message: "blocked open of denied path " + exe})
	}
	if v.logged != maxViolations || v.dropped != 0 || v.size > maxBytes {
		t.Errorf("long programs' paths: logged %d, dropped %d, %d bytes; want all %d in %d bytes", v.logged, v.dropped, v.size, maxViolations, maxBytes)
	}

	w := newTestLog(t)
	path := "/" + strings.Repeat("\x01", 4000)
	for i := 0; i < maxViolations; i++ {
		w.queueEvent(strconv.Itoa(i), eventlog.Event{Command: "x", Path: path + strconv.Itoa(i), Message: "blocked open of denied path"})
	}
	if w.size > maxBytes || w.logged == 0 || w.logged+w.dropped != maxViolations || w.dropped == 0 || !w.bytesHit {
		t.Errorf("long paths: logged %d, dropped %d, %d bytes (bound %d), size bound said %v", w.logged, w.dropped, w.size, maxBytes, w.bytesHit)
	}
}

// Full says when no line can be logged any more (a mask's observer then
// only counts a touch): at the cap of lines, not before, and once flushed.
func TestFullOnceNoLineCanBeLogged(t *testing.T) {
	v := newTestLog(t)
	for i := 0; i < maxViolations; i++ {
		if v.Full() {
			t.Fatalf("full after %d lines, before the cap of %d", i, maxViolations)
		}
		v.LogFile(File{Comm: "cat", Op: "open", Path: "/w/k" + strconv.Itoa(i) + ".key", Entry: "*.key"})
	}
	if !v.Full() || v.logged != maxViolations {
		t.Fatalf("after %d lines: full %v, logged %d", maxViolations, v.Full(), v.logged)
	}
	v.LogFile(File{Comm: "cat", Op: "open", Path: "/w/late.key", Entry: "*.key"})
	v.Lost(1)
	if v.logged != maxViolations || v.dropped != 2 {
		t.Errorf("past the cap: logged %d, dropped %d; want %d and 2", v.logged, v.dropped, maxViolations)
	}

	w := newTestLog(t)
	w.LogFile(File{Comm: "cat", Op: "open", Path: "/w/.env", Entry: ".env"})
	if w.Full() {
		t.Fatal("full after one line")
	}
	w.Flush()
	if !w.Full() {
		t.Error("not full once flushed")
	}
}

func TestClipBoundsTheJSONText(t *testing.T) {
	for _, c := range []struct {
		in    string
		limit int
	}{
		{strings.Repeat("a", 5000), 512},
		{strings.Repeat("\x01", 4000), 512},
		{strings.Repeat("é", 3000), 1024},
		{strings.Repeat("&", 3000), 1024},
		{"/usr/bin/cat", 512},
	} {
		out := Clip(c.in, c.limit)
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(b)-2 > c.limit {
			t.Errorf("Clip(%.20q..., %d): JSON text of %d bytes", c.in, c.limit, len(b)-2)
		}
		if !utf8.ValidString(out) {
			t.Errorf("Clip(%.20q..., %d) cut a character", c.in, c.limit)
		}
		if len(c.in) <= c.limit && out != c.in {
			t.Errorf("Clip(%q) = %q, want it whole", c.in, out)
		}
		if out != c.in && !strings.HasSuffix(out, "...("+strconv.Itoa(len(c.in))+" bytes)") {
			t.Errorf("Clip(%.20q...) = ...%q: not marked as cut", c.in, out[len(out)-20:])
		}
	}
}
