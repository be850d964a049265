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
