package sandboxinit

import (
	"net"
	"testing"

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
	if fd, err := dial("localhost", port, true); err == nil {
		unix.Close(fd)
		t.Fatal("a name resolving to 127.0.0.1 was dialled for a non-loopback rule")
	}
	fd, err := dial("localhost", port, false)
	if err != nil {
		t.Fatalf("a loopback rule: %v", err)
	}
	unix.Close(fd)
}
