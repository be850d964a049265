package maskfs

import (
	"testing"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/sandboxinit/violations"
)

// An in-process observer whose connection ends while the run goes on
// closes its reports' channel, so that Watch logs that observation
// stopped (an observer process that is gone does the same by exiting).
func TestServeInProcessClosesReportsWhenTheConnectionEnds(t *testing.T) {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sp[0])
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	// A connection that ends at once: every read of it sees the end.
	unix.Close(p[1])
	out := newSender(sp[1])
	s := &fuseServer{dev: p[0], masks: []policy.Mask{{Path: "/x/.env", Entry: ".env"}}, setup: 1, send: out.send}
	serveInProcess(s, out)
	// The end comes at once; 30 s only bounds a failure.
	fds := []unix.PollFd{{Fd: int32(sp[0]), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 30000); err != nil || n != 1 {
		t.Fatalf("reports' channel still open: poll %d, %v", n, err)
	}
	buf := make([]byte, 16)
	n, _, err := unix.Recvfrom(sp[0], buf, 0)
	if err != nil || n != 0 {
		t.Fatalf("reports' channel: read %d bytes, %v; want its end", n, err)
	}
	// Reports after the end are dropped, not sent on a closed (or reused)
	// descriptor.
	out.send(violations.File{Comm: "cat", Path: "/x/.env"})
	if !out.closed {
		t.Fatal("sender not marked closed")
	}
}

// Only an observer process asks the kernel for a request timeout: pid 1
// cannot be stopped, and a timeout would let a process that starves it
// end the observation.
func TestRequestTimeoutOnlyForAnObserverProcess(t *testing.T) {
	in := make([]byte, 20)
	in[0] = 7                          // major
	in[4] = 40                         // minor
	in[12+3] = byte(fuseInitExt >> 24) // flags: FUSE_INIT_EXT (bit 30)
	in[16+1] = byte(fuseRequestTimeout >> 8)
	asked := func(s *fuseServer) bool {
		out := s.initOut(in)
		return len(out) >= 42 && out[40]|out[41] != 0
	}
	if !asked(&fuseServer{timeout: true}) {
		t.Error("an observer process asks for no request timeout")
	}
	if asked(&fuseServer{}) {
		t.Error("pid 1's own observer asks for a request timeout")
	}
}
