package proxy

import (
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

// atEOF tells a splice's 0 at the end of a connection from one with the
// peer still there (nothing sent yet, or data that came just too late for
// the splice): only the first ends the copy.
func TestAtEOF(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	peer, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	at := func() (eof bool) {
		if err := raw.Control(func(fd uintptr) { eof = atEOF(int(fd)) }); err != nil {
			t.Fatal(err)
		}
		return eof
	}
	if at() {
		t.Fatal("a connection with nothing sent yet taken for ended")
	}
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	// Wait for the byte (the condition, not a time), then look.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		_ = raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the byte never arrived")
		}
		time.Sleep(time.Millisecond)
	}
	if at() {
		t.Fatal("a connection with data waiting taken for ended")
	}
	buf := make([]byte, 1)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	peer.(*net.TCPConn).CloseWrite()
	for deadline := time.Now().Add(10 * time.Second); !at(); {
		if time.Now().After(deadline) {
			t.Fatal("a connection its peer ended never taken for ended")
		}
		time.Sleep(time.Millisecond)
	}
}
