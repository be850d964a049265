package resolve

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The newer file wins; a copy dated in the future (its time is a
// sandbox's to set) never does, so your own edit of the original stays.
func TestSyncMirrorRefusesACopyFromTheFuture(t *testing.T) {
	dir := t.TempDir()
	orig, copy := filepath.Join(dir, "orig.json"), filepath.Join(dir, "state", "orig.json")
	if err := os.Mkdir(filepath.Dir(copy), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(path, data string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	now := time.Now()
	write(orig, "clean", now.Add(-time.Hour))
	write(copy, "newer", now.Add(-time.Minute))
	if err := syncMirror(orig, copy); err != nil {
		t.Fatal(err)
	}
	if got := read(orig); got != "newer" {
		t.Fatalf("the newer copy did not reach the original: %q", got)
	}
	write(copy, "evil", now.Add(24*time.Hour*365))
	write(orig, "cleaned by you", now)
	if err := syncMirror(orig, copy); err != nil {
		t.Fatal(err)
	}
	if got := read(orig); got != "cleaned by you" {
		t.Fatalf("a copy from the future overwrote the original: %q", got)
	}
	if got := read(copy); got != "cleaned by you" {
		t.Fatalf("the copy from the future was kept: %q", got)
	}
}
