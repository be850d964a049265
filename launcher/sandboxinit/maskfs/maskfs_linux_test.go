package maskfs

import (
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/sandboxinit/violations"
	"grok-sandbox/launcher/seccomp"
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

// A report that could not be sent (pid 1's reader behind) is carried by
// the next one; once the log is full no report follows, and a touch
// counted there hands the count over instead of stranding it.
func TestCountOnlyTouchTakesUnsentReports(t *testing.T) {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sp[0])
	defer unix.Close(sp[1])
	if err := unix.SetsockoptInt(sp[1], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	arch, err := seccomp.HostArch()
	if err != nil {
		t.Skip(err)
	}
	out := newSender(sp[1])
	var log atomic.Pointer[violations.Log]
	s := &fuseServer{setup: os.Getpid(), arch: arch, send: out.send, log: &log, unsent: out.takeLost}
	// A process of the sandbox's: the test's child, not one of this
	// process's threads.
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	m := policy.Mask{Path: "/w/k.key", Entry: "*.key"}
	buf := make([]byte, 4096)
	// Nobody reads: reports queue until one cannot be sent.
	for i := 0; out.lost == 0; i++ {
		if i == 1000 {
			t.Fatal("every report was sent")
		}
		s.observe(child.Process.Pid, m, buf)
	}
	v := violations.New("p", "bwrap", -1, arch)
	for i := 0; !v.Full(); i++ {
		v.LogFile(violations.File{Comm: "cat", Op: "open", Path: "/w/" + strconv.Itoa(i), Entry: "*"})
	}
	log.Store(v)
	s.observe(child.Process.Pid, m, buf)
	if out.lost != 0 {
		t.Errorf("%d unsent reports left with the sender once the log was full: never counted", out.lost)
	}
}
