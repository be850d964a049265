package pathwatch

import (
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/seccomp"
)

// A look on the supervisor's loop that is slow (its read of the caller's
// path waits for a memory map a child keeps busy) sends the calls after it
// off the loop, while it lasts and for slowFor after: the loop answers
// every other process's calls, and must not wait for each of a child's
// threads in turn.
func TestSlowLookSendsLooksOffTheLoop(t *testing.T) {
	arch, err := seccomp.HostArch()
	if err != nil {
		t.Skip(err)
	}
	nr, ok := seccomp.SyscallNr(arch, "openat")
	if !ok {
		t.Fatal("no openat")
	}
	reads, release := make(chan struct{}, 3), make(chan struct{})
	testHookReadPath = func() {
		reads <- struct{}{}
		<-release
	}
	defer func() { testHookReadPath = nil }()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal(what)
		}
	}

	path := []byte("/nonexistent-grok-sandbox-test\x00")
	n := seccomp.Notification{Pid: os.Getpid(), Nr: nr}
	fdcwd := int32(unix.AT_FDCWD)
	n.Args[0] = uint64(uint32(fdcwd))
	n.Args[1] = uint64(uintptr(unsafe.Pointer(&path[0])))
	w := New(arch, nil, nil)
	w.slowFor = time.Hour // no test run is that slow between two calls
	seen := func() <-chan struct{} {
		done := make(chan struct{})
		go func() {
			if !w.Seen(nil, n, seccomp.DetachedReply()) {
				t.Error("Seen did not claim an openat")
			}
			close(done)
		}()
		return done
	}
	// The first call is looked at on the loop; its read is held.
	first := seen()
	wait("the first call's path was never read", reads)
	select {
	case <-first:
		t.Fatal("the first call returned to the loop before its look")
	default:
	}
	time.Sleep(2 * slowLook)
	// A call meanwhile returns to the loop while its read is held: it is
	// looked at off the loop.
	second := seen()
	wait("a call was held on the loop by its look while the look there was slow", second)
	wait("the second call's path was never read", reads)
	free()
	wait("the first call did not return", first)
	// The slow look ended: the calls after it still go off the loop.
	release2 := make(chan struct{})
	testHookReadPath = func() {
		reads <- struct{}{}
		<-release2
	}
	third := seen()
	wait("a call was held on the loop by its look after a slow look", third)
	wait("the third call's path was never read", reads)
	close(release2)
	runtime.KeepAlive(path)
}

// readPath reads the first page's part, then the rest only when no NUL is
// in it: a path across a page boundary is read whole, one that ends at the
// last byte before an unmapped page too, and one with no NUL within
// PATH_MAX not at all.
func TestReadPathAcrossPages(t *testing.T) {
	const page = 4096
	mem, err := unix.Mmap(-1, 0, 3*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[2*page:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	long := "/w/"
	for len(long) < 3000 {
		long += "d/"
	}
	at := func(off int, s string) uint64 {
		copy(mem[off:], s)
		mem[off+len(s)] = 0
		return uint64(uintptr(unsafe.Pointer(&mem[off])))
	}
	pid := os.Getpid()
	for _, c := range []struct {
		name string
		off  int
		path string
	}{
		{"short, inside a page", 100, "/w/.env"},
		{"across the page boundary", page - 5, "/workspace/hooks/pre-commit"},
		{"long, across the boundary", page - 1000, long},
		{"ending before an unmapped page", 2*page - 1 - len("/w/last"), "/w/last"},
	} {
		got, ok := readPath(pid, at(c.off, c.path))
		if !ok || got != c.path {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, ok, c.path)
		}
	}
	// No NUL before PATH_MAX: not a path.
	for i := range mem[:2*page] {
		mem[i] = 'a'
	}
	if got, ok := readPath(pid, uint64(uintptr(unsafe.Pointer(&mem[10])))); ok {
		t.Errorf("no NUL within PATH_MAX: got %d bytes", len(got))
	}
}
