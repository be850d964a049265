package violations

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sockaddr lays out a struct sockaddr_un (or another family's header) in
// this process's memory, as a caller of connect would, and returns its
// address and length.
func sockaddr(t *testing.T, family uint16, path string) (buf []byte, addr, n uint64) {
	t.Helper()
	buf = make([]byte, 2+len(path)+1)
	*(*uint16)(unsafe.Pointer(&buf[0])) = family
	copy(buf[2:], path)
	return buf, uint64(uintptr(unsafe.Pointer(&buf[0]))), uint64(len(buf))
}

func TestConnectToMissingPath(t *testing.T) {
	// What is missing, not how long a look may take (TestMissingWithin
	// Bounded): on a loaded machine a stat's goroutine once missed the
	// 50 ms, and nscd's absent socket counted as there.
	defer func(w time.Duration) { statWait = w }(statWait)
	statWait = 30 * time.Second
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)

	self := unix.Gettid()
	for _, c := range []struct {
		name    string
		family  uint16
		path    string
		missing bool
	}{
		{"missing absolute path", unix.AF_UNIX, filepath.Join(dir, "nothing.sock"), true},
		{"nscd's socket", unix.AF_UNIX, "/var/run/nscd/socket-grok-sandbox-test-absent", true},
		{"under a regular file (ENOTDIR)", unix.AF_UNIX, filepath.Join(dir, "file", "x.sock"), true},
		{"missing relative path, from the caller's cwd", unix.AF_UNIX, "nothing.sock", true},
		{"existing socket", unix.AF_UNIX, sock, false},
		{"existing socket, relative", unix.AF_UNIX, "s.sock", false},
		{"existing non-socket", unix.AF_UNIX, filepath.Join(dir, "file"), false},
		{"abstract", unix.AF_UNIX, "\x00grok-sandbox-test-absent", false},
		{"another family", unix.AF_INET, "/nothing", false},
	} {
		runtime.LockOSThread()
		buf, addr, n := sockaddr(t, c.family, c.path)
		got := ConnectToMissingPath(self, addr, n)
		runtime.KeepAlive(buf)
		runtime.UnlockOSThread()
		if got != c.missing {
			t.Errorf("%s (%q): missing = %v, want %v", c.name, c.path, got, c.missing)
		}
	}

	// Lengths and addresses that cannot be a pathname sockaddr are never
	// taken as missing.
	buf, addr, _ := sockaddr(t, unix.AF_UNIX, "/nothing-here")
	for _, bad := range []struct{ addr, n uint64 }{{addr, 2}, {addr, 111}, {0, 16}, {1, 16}, {^uint64(0) - 4, 16}} {
		if ConnectToMissingPath(self, bad.addr, bad.n) {
			t.Errorf("addr %#x len %d: taken as missing", bad.addr, bad.n)
		}
	}
	runtime.KeepAlive(buf)
}

// A check that cannot finish in time counts as "exists" (the line is
// logged), and while it is stuck no other check waits on it.
func TestMissingWithinBounded(t *testing.T) {
	statSlot <- struct{}{} // a stuck check holds the slot
	start := time.Now()
	// Waiting for the held slot would take the whole minute; a loaded
	// machine may be slow, but never that slow.
	if missingWithin("/nothing-grok-sandbox-test", time.Minute) {
		t.Error("taken as missing while the slot was held")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("waited %v for the held slot", d)
	}
	<-statSlot
	if !missingWithin("/nothing-grok-sandbox-test", 30*time.Second) {
		t.Error("a missing path is not missing")
	}
}
