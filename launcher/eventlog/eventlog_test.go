package eventlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Concurrent launches append whole lines: every line parses, none is lost,
// and the file keeps mode 0600.
func TestAppendEventConcurrent(t *testing.T) {
	dir := t.TempDir()
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				ev := Event{Event: "applied", Profile: "workspace", Message: fmt.Sprintf("w%d-%d %s", w, i, strings.Repeat("x", 300))}
				if err := Append(dir, ev); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	path := filepath.Join(dir, Name)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	seen := map[string]bool{}
	for _, line := range readLines(t, path) {
		var ev Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("torn line %q: %v", line, err)
		}
		seen[ev.Message] = true
	}
	if len(seen) != writers*each {
		t.Errorf("%d distinct events, want %d", len(seen), writers*each)
	}
}

// The log never grows without bound: past Max it moves to .1, and
// the two files together stay near twice the bound.
func TestAppendEventRotates(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("y", 4000)
	// Both files exist first: rotation must keep their inodes, which
	// running sandboxes have bound read-only at these paths.
	if err := Append(dir, Event{Event: "applied"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, Name+".1"), nil, 0o600)
	logBefore, _ := os.Stat(filepath.Join(dir, Name))
	rotBefore, _ := os.Stat(filepath.Join(dir, Name+".1"))
	for i := 0; i < 2*Max/4000+50; i++ {
		if err := Append(dir, Event{Event: "applied", Message: big}); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := os.Stat(filepath.Join(dir, Name))
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.Stat(filepath.Join(dir, Name+".1"))
	if err != nil {
		t.Fatal("no rotated file:", err)
	}
	if cur.Size() > Max || old.Size() > Max {
		t.Errorf("sizes %d and %d exceed %d", cur.Size(), old.Size(), Max)
	}
	if !os.SameFile(cur, logBefore) || !os.SameFile(old, rotBefore) {
		t.Errorf("rotation replaced a file instead of rewriting it in place")
	}
	if old.Size() == 0 {
		t.Errorf("nothing was rotated")
	}
}

// A symlink planted at the log's path is not followed.
func TestAppendEventRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.Symlink(target, filepath.Join(dir, Name)); err != nil {
		t.Fatal(err)
	}
	if err := Append(dir, Event{Event: "applied"}); err == nil {
		t.Error("appended through a symlink")
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("the symlink target was created")
	}
}

func readLines(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// BenchmarkAppend measures the event-log write every launch makes.
func BenchmarkAppend(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		if err := Append(dir, Event{Event: "applied", Profile: "workspace"}); err != nil {
			b.Fatal(err)
		}
	}
}
