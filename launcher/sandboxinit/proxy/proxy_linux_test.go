package proxy

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"grok-sandbox/launcher/policy"

	"golang.org/x/sys/unix"
)

// A name the allow-list lists must not lead to the host's loopback (a name
// in /etc/hosts or a DNS answer could point there); only a loopback rule
// may. Found by an attacker review.
func TestDialRefusesLoopbackForNames(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	p := &Proxy{}
	// "localhost" is in /etc/hosts: as a loopback name it may reach the
	// loopback; the same address through another name's guard may not.
	if fd, err := dial("localhost", port, func(a netip.Addr) error { return p.guard("api.example", port, false)(a) }); err == nil {
		unix.Close(fd)
		t.Fatal("a name resolving to 127.0.0.1 was dialled for a non-loopback rule")
	}
	fd, err := dial("localhost", port, p.guard("localhost", port, false))
	if err != nil {
		t.Fatalf("a loopback rule: %v", err)
	}
	unix.Close(fd)
}

// A listed name's answer in loopback, link-local (cloud metadata), the
// private ranges, shared address space, unspecified or one of the host's
// own addresses is refused, unless a rule names that address itself; an IP
// literal rule and a public answer are not; the command (any) goes
// anywhere.
func TestProxyGuardRefusesLocalAnswers(t *testing.T) {
	p := &Proxy{rules: []policy.HostRule{{Host: "api.example", Port: 443}, {Host: "10.1.2.3", IP: true, Port: 443}}}
	for _, c := range []struct {
		addr string
		ok   bool
	}{
		{"93.184.216.34", true}, {"2606:2800:220:1::", true},
		{"169.254.169.254", false}, {"fe80::1", false}, {"127.0.0.1", false}, {"::1", false},
		{"10.0.0.1", false}, {"172.16.5.4", false}, {"192.168.1.1", false}, {"fd00::1", false},
		{"100.100.100.200", false}, {"0.0.0.0", false}, {"::ffff:169.254.169.254", false},
		{"10.1.2.3", true}, // a rule names it
	} {
		err := p.guard("api.example", 443, false)(netip.MustParseAddr(c.addr))
		if (err == nil) != c.ok {
			t.Errorf("api.example -> %s: %v, want allowed=%v", c.addr, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "only an allow_hosts rule naming that address") {
			t.Errorf("%s: %v", c.addr, err)
		}
	}
	if g := p.guard("169.254.169.254", 443, false); g != nil {
		t.Error("an IP literal rule is guarded")
	}
	if g := p.guard("api.example", 443, true); g != nil {
		t.Error("the command's relay is guarded")
	}
	for a := range hostAddrs() {
		if !a.IsLoopback() && p.guard("api.example", 443, false)(a) == nil {
			t.Errorf("the host's own address %s is not guarded", a)
		}
	}
}

// After a signal interrupts a blocking connect, the connect goes on in
// the kernel and asking again only says EALREADY: awaitConnected (what
// connectTCP does then) ends as the connect does, connected to a
// listener, refused by a closed port. A nonblocking connect puts a socket
// in that very state.
func TestAwaitConnectedFinishesAConnectInProgress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	open := l.Addr().(*net.TCPAddr).Port
	c, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := c.Addr().(*net.TCPAddr).Port
	c.Close()
	for _, tc := range []struct {
		port int
		want error
	}{{open, nil}, {closed, unix.ECONNREFUSED}} {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		sa := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: tc.port}
		if first := unix.Connect(fd, sa); first != unix.EINPROGRESS {
			t.Fatalf("port %d: nonblocking connect = %v, want EINPROGRESS", tc.port, first)
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			t.Fatal(err)
		}
		if got := awaitConnected(fd, 10*time.Second); got != tc.want {
			t.Errorf("port %d: awaitConnected = %v, want %v", tc.port, got, tc.want)
		}
		unix.Close(fd)
	}
}

// An urgent byte last before the peer's end is no end of the copy, and is
// taken off the socket: a splice stops at it and returns 0, and a socket
// closed with it unread answers the peer with a reset, which cuts off what
// the proxy is still sending the other way.
func TestSpliceUrgentLastByte(t *testing.T) {
	pair := func() (ours, theirs *net.TCPConn) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		a, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return a.(*net.TCPConn), c.(*net.TCPConn)
	}
	fdOf := func(c *net.TCPConn) int {
		f, err := c.File() // a blocking copy, as the proxy's sockets are
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return int(f.Fd())
	}
	src, peer := pair()
	dst, reader := pair()
	defer peer.Close()
	defer reader.Close()
	srcFd, dstFd := fdOf(src), fdOf(dst)
	src.Close() // the copies in fdOf hold the sockets
	dst.Close()

	raw, err := peer.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.Sendto(int(fd), []byte("!"), unix.MSG_OOB, nil) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	if err := peer.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan bool, 1)
	go func() { ended <- splice(dstFd, srcFd) }()
	select {
	case ok := <-ended:
		if !ok {
			t.Fatal("splice could not be used")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the copy did not end at the peer's end")
	}
	_ = unix.Shutdown(dstFd, unix.SHUT_WR)
	got := make([]byte, 64)
	n, _ := io.ReadFull(reader, got)
	if string(got[:n]) != "hello" {
		t.Fatalf("copied %q, want hello", got[:n])
	}
	// Closed now, as the proxy closes it: the peer sees an end, not a reset.
	unix.Close(srcFd)
	peer.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := peer.Read(got); err != io.EOF {
		t.Fatalf("the peer read %v after the proxy closed its socket, want EOF (a reset means the urgent byte was left unread)", err)
	}
}
