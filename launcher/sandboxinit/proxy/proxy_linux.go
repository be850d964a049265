package proxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/sandboxinit/childnet"
	"grok-sandbox/launcher/sandboxinit/violations"
)

// Proxy is one allow-list proxy.
type Proxy struct {
	rules []policy.HostRule
	v     *violations.Log
	port  int
	cnet  *childnet.Net
	// loopback: some rule names a loopback host (localhost:5000,
	// 127.0.0.2:8080). NO_PROXY then leaves loopback out, and the proxy
	// takes an unlisted loopback destination to the children's own
	// loopback instead of refusing it.
	loopback bool
	clients  chan struct{}
	// hostClients bounds the command's relay apart from the children's
	// proxy: children holding every slot must not cut the command off.
	hostClients chan struct{}
}

// Start opens both listeners and serves them until the process ends.
func Start(c *childnet.Net, rules []policy.HostRule, v *violations.Log) (*Proxy, error) {
	host, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(host, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(host)
		return nil, fmt.Errorf("binding the proxy on the host's loopback: %v", err)
	}
	sa, err := unix.Getsockname(host)
	if err != nil {
		unix.Close(host)
		return nil, err
	}
	port := sa.(*unix.SockaddrInet4).Port
	inside, err := c.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		unix.Close(host)
		return nil, fmt.Errorf("the proxy's socket in the children's namespace: %v", err)
	}
	if err := unix.Bind(inside, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}); err != nil {
		unix.Close(host)
		unix.Close(inside)
		return nil, fmt.Errorf("binding the proxy in the children's namespace: %v", err)
	}
	for _, fd := range []int{host, inside} {
		if err := unix.Listen(fd, 128); err != nil {
			unix.Close(host)
			unix.Close(inside)
			return nil, err
		}
	}
	p := &Proxy{rules: rules, v: v, port: port, cnet: c, clients: make(chan struct{}, 256), hostClients: make(chan struct{}, 64)}
	c.SetProxyPort(port)
	for _, r := range rules {
		if isLoopback(r.Host) {
			p.loopback = true
		}
	}
	go p.accept(inside, false)
	go p.accept(host, true)
	return p, nil
}

// Env are the proxy variables for the command's environment.
func (p *Proxy) Env(env []string) []string {
	url := "http://127.0.0.1:" + strconv.Itoa(p.port)
	set := map[string]string{"NO_PROXY": "localhost,127.0.0.1,::1"}
	if p.loopback {
		set["NO_PROXY"] = ""
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		set[k] = url
	}
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[strings.ToUpper(k)]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"} {
		out = append(out, k+"="+set[k], strings.ToLower(k)+"="+set[k])
	}
	return out
}

func (p *Proxy) accept(l int, host bool) {
	for {
		c, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC)
		if err == unix.EINTR || err == unix.ECONNABORTED {
			continue
		}
		if err != nil {
			return
		}
		if host && !fromSandbox(c, p.port) {
			unix.Close(c)
			continue
		}
		// A bounded number of clients at once (each holds threads of
		// pid 1 while it blocks): beyond it a client is closed at once.
		pool := p.clients
		if host {
			pool = p.hostClients
		}
		select {
		case pool <- struct{}{}:
		default:
			unix.Close(c)
			continue
		}
		go func() {
			defer func() { <-pool }()
			// Whatever a client sends, pid 1 must not go down with it.
			defer func() {
				if r := recover(); r != nil {
					fmt.Fprintf(os.Stderr, "grok-sandbox: proxy: %v (connection dropped)\n", r)
				}
			}()
			p.serve(c, host)
		}()
	}
}

// serve handles one client connection.
func (p *Proxy) serve(c int, any bool) {
	defer unix.Close(c)
	tv := unix.Timeval{Sec: 30}
	_ = unix.SetsockoptTimeval(c, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	// The request head within 15 s in all, however it trickles in: a
	// slow client must not hold its slot for ever.
	headDone := make(chan struct{})
	go func() {
		select {
		case <-headDone:
		case <-time.After(15 * time.Second):
			_ = unix.Shutdown(c, unix.SHUT_RDWR)
		}
	}()
	head, rest, err := readHead(c)
	close(headDone)
	if err != nil {
		return
	}
	line, headers, _ := strings.Cut(string(head), "\r\n")
	method, target, version, ok := splitRequestLine(line)
	if !ok {
		writeStatus(c, 400, "a request line of METHOD TARGET VERSION")
		return
	}
	var host string
	var port int
	var forward []byte
	if method == "CONNECT" {
		host, port, ok = splitHostPort(target, 443)
	} else {
		// An absolute http:// URL: forwarded in origin form, one request
		// per connection.
		u, found := strings.CutPrefix(target, "http://")
		if !found {
			writeStatus(c, 400, "only CONNECT and http:// URLs go through this proxy")
			return
		}
		hostport, path, _ := strings.Cut(u, "/")
		host, port, ok = splitHostPort(hostport, 80)
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s /%s %s\r\n", method, path, version)
		for _, h := range strings.Split(headers, "\r\n") {
			name, _, _ := strings.Cut(h, ":")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "", "host", "connection", "proxy-connection", "proxy-authorization", "keep-alive":
				continue
			}
			b.WriteString(h + "\r\n")
		}
		// The Host is the URL's, which the allow-list checked: a client
		// cannot name another site on the same address in its own.
		b.WriteString("Host: " + hostport + "\r\nConnection: close\r\n\r\n")
		forward = b.Bytes()
	}
	if !ok {
		writeStatus(c, 400, "a host:port")
		return
	}
	inside := false
	if !any && !p.allows(host, port) && p.loopback && isLoopback(host) {
		inside = true
	} else if !any && !p.allows(host, port) {
		p.v.RecordProxy(p.clientProgram(c), method, net2(host, port), fmt.Sprintf("blocked %s %s:%d: not in allow_hosts", method, host, port))
		writeStatus(c, 403, "grok-sandbox: "+host+":"+strconv.Itoa(port)+" is not in this profile's allow_hosts")
		return
	}
	// An IP literal with a trailing dot is that IP (the allow-list took
	// it so), never a name to look up.
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.Trim(host, "[]"), ".")); err == nil {
		host = a.String()
		if a.Is6() && !a.Is4In6() {
			host = "[" + host + "]"
		}
	}
	dialer := func(host string, port int) (int, error) { return dial(host, port, p.guard(host, port, any)) }
	if inside {
		dialer = p.dialInside
	}
	up, err := dialer(host, port)
	if err != nil && inside {
		p.v.RecordProxy(p.clientProgram(c), method, net2(host, port), fmt.Sprintf("%s %s:%d refused: not in allow_hosts, and nothing listens there on the children's private loopback", method, host, port))
	}
	if err != nil {
		writeStatus(c, 502, "grok-sandbox: "+err.Error())
		return
	}
	defer unix.Close(up)
	if method == "CONNECT" {
		if writeAll(c, []byte("HTTP/1.1 200 Connection established\r\n\r\n")) != nil {
			return
		}
	} else if writeAll(up, forward) != nil {
		return
	}
	if len(rest) > 0 && writeAll(up, rest) != nil {
		return
	}
	_ = unix.SetsockoptTimeval(c, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{})
	pipe(c, up)
}

func (p *Proxy) allows(host string, port int) bool {
	for _, r := range p.rules {
		if r.Allows(host, port) {
			return true
		}
	}
	return false
}

// readHead reads up to the blank line that ends a request's head (at most
// 32 KiB); rest is what came after it.
func readHead(c int) (head, rest []byte, err error) {
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	for len(buf) < 32<<10 {
		n, err := unix.Read(c, tmp)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return nil, nil, errors.New("no request")
		}
		buf = append(buf, tmp[:n]...)
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			return buf[:i], buf[i+4:], nil
		}
	}
	return nil, nil, errors.New("request head too long")
}

func splitRequestLine(line string) (method, target, version string, ok bool) {
	f := strings.Split(line, " ")
	if len(f) != 3 || !strings.HasPrefix(f[2], "HTTP/") {
		return "", "", "", false
	}
	return f[0], f[1], f[2], true
}

// splitHostPort splits "host:port", "[v6]:port" or a bare host (def).
func splitHostPort(s string, def int) (string, int, bool) {
	host, port := s, def
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return "", 0, false
		}
		host = s[1:end]
		if r := s[end+1:]; r != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(r, ":"))
			if err != nil || !strings.HasPrefix(r, ":") {
				return "", 0, false
			}
			port = n
		}
	} else if h, p, found := strings.Cut(s, ":"); found {
		n, err := strconv.Atoi(p)
		if err != nil {
			return "", 0, false
		}
		host, port = h, n
	}
	if host == "" || port < 1 || port > 65535 || strings.ContainsAny(host, " /\\@") {
		return "", 0, false
	}
	return host, port, true
}

func writeStatus(c, code int, msg string) {
	text := map[int]string{400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[code]
	body := msg + "\n"
	_ = writeAll(c, fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code, text, len(body), body))
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// pipe copies both ways until both sides are done.
func pipe(a, b int) {
	done := make(chan struct{}, 2)
	cp := func(dst, src int) {
		if !splice(dst, src) {
			buf := make([]byte, 64<<10)
			for {
				n, err := unix.Read(src, buf)
				if err == unix.EINTR {
					continue
				}
				if err != nil || n == 0 || writeAll(dst, buf[:n]) != nil {
					break
				}
			}
		}
		_ = unix.Shutdown(dst, unix.SHUT_WR)
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}

// spliceChunk is what one splice asks for; the pipe between the sockets
// is grown to it where the system allows.
const spliceChunk = 1 << 20

// splice copies src to dst through a pipe, in the kernel (no copy through
// this process: the proxy moved data at well under half of a direct
// download's rate copying it through user space). It returns false, having
// moved nothing, where splice cannot be used (no pipe, a socket it does not
// support): then the caller copies.
func splice(dst, src int) bool {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return false
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, spliceChunk)
	first := true
	var buf []byte // for copyOnce, made when first needed
	for {
		n, err := unix.Splice(src, nil, p[1], nil, spliceChunk, unix.SPLICE_F_MOVE|unix.SPLICE_F_MORE)
		if err == unix.EINTR {
			continue
		}
		if err != nil && first && (err == unix.EINVAL || err == unix.ENOSYS) {
			return false
		}
		first = false
		if err == nil && n == 0 {
			// A splice from a TCP socket can return 0 with the
			// connection still open: when data is queued that it does
			// not take (urgent data, by tcp_splice_read's comment). One
			// read tells: it returns 0 only at the end, and otherwise
			// moves what is there through this process (consuming an
			// urgent byte a splice stops at, which a socket closed with
			// it unread would answer with a reset, cutting off what is
			// still being sent the other way); then splicing goes on.
			if buf == nil {
				buf = make([]byte, 64<<10)
			}
			if !copyOnce(dst, src, buf) {
				return true
			}
			continue
		}
		if err != nil || n == 0 {
			return true
		}
		for n > 0 {
			m, err := unix.Splice(p[0], nil, dst, nil, int(n), unix.SPLICE_F_MOVE|unix.SPLICE_F_MORE)
			if err == unix.EINTR {
				continue
			}
			if err != nil || m == 0 {
				return true
			}
			n -= m
		}
	}
}

// copyOnce moves what one read of src into buf gives to dst; false at
// src's end or on an error.
func copyOnce(dst, src int, buf []byte) bool {
	for {
		n, err := unix.Read(src, buf)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0 && writeAll(dst, buf[:n]) == nil
	}
}

// isLoopback is whether host names the loopback: localhost, *.localhost
// or a loopback address.
func isLoopback(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().IsLoopback()
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// dialInside connects to a loopback destination in the children's own
// namespace (a socket from the net helper): what the client would have
// reached without the proxy.
func (p *Proxy) dialInside(host string, port int) (int, error) {
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	a = a.Unmap()
	// The family first: As4 panics on an IPv6 address (a child's CONNECT
	// [::1]:1 took pid 1 down with it).
	family := unix.AF_INET6
	var sa unix.Sockaddr = &unix.SockaddrInet6{Addr: a.As16(), Port: port}
	if a.Is4() {
		family = unix.AF_INET
		sa = &unix.SockaddrInet4{Addr: a.As4(), Port: port}
	}
	fd, err := p.cnet.Socket(family, unix.SOCK_STREAM, 0)
	if err != nil {
		return -1, err
	}
	if err := connectTCP(fd, sa, 10*time.Second); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("connect %s:%d: %v", host, port, err)
	}
	return fd, nil
}

// connectTCP connects the blocking TCP socket fd to sa within limit. A
// signal that interrupts the connect (pid 1 takes SIGCHLD for every child
// that ends) leaves it going on in the kernel, where connect again would
// only say EALREADY: then it waits for the socket to be writable and
// reads how the connect ended (SO_ERROR).
func connectTCP(fd int, sa unix.Sockaddr, limit time.Duration) error {
	err := unix.Connect(fd, sa)
	if err != unix.EINTR && err != unix.EINPROGRESS && err != unix.EALREADY {
		return err
	}
	return awaitConnected(fd, limit)
}

// awaitConnected waits, at most limit, for a connect in progress on fd to
// end, and returns how it ended.
func awaitConnected(fd int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return unix.ETIMEDOUT
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if err == unix.EINTR || err == nil && n == 0 {
			continue
		}
		if err != nil {
			return err
		}
		soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			return err
		}
		if soerr != 0 {
			return unix.Errno(soerr)
		}
		// Writable with no error pending: connected, unless the error
		// was read already.
		if _, err := unix.Getpeername(fd); err != nil {
			return err
		}
		return nil
	}
}

// guard is what an address host resolves to may be, for a client of the
// children's proxy (any: the command's, which goes anywhere). A name an
// allow_hosts rule lists may be made to resolve (its DNS, /etc/hosts is
// the host's) to the host's own services, a cloud metadata service
// (169.254.169.254, 100.100.100.200) or the local network: an answer in
// loopback, the unspecified address, link-local, the private ranges (RFC
// 1918, ULA), shared address space (100.64.0.0/10) or one of the host's
// own addresses is refused, unless a rule names that address itself (or
// the name is a loopback one, such as localhost, for a loopback answer).
// An IP literal is what its rule named: never refused here.
func (p *Proxy) guard(host string, port int, any bool) func(netip.Addr) error {
	if any {
		return nil
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return nil
	}
	loopbackName := isLoopback(host)
	return func(a netip.Addr) error {
		a = a.Unmap()
		why := guardedRange(a)
		if why == "" {
			return nil
		}
		if loopbackName && a.IsLoopback() {
			return nil
		}
		if p.allows(a.String(), port) || p.allows("["+a.String()+"]", port) {
			return nil
		}
		return fmt.Errorf("%s resolves to %s (%s), which only an allow_hosts rule naming that address may reach", host, a, why)
	}
}

// sharedSpace is 100.64.0.0/10 (RFC 6598; Alibaba Cloud's metadata lives
// there).
var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

// guardedRange names the range of a that a name's answer may not reach
// ("": none).
func guardedRange(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "the host's loopback"
	case a.IsUnspecified():
		return "the unspecified address, the host itself"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local, where cloud metadata services live"
	case a.IsPrivate():
		return "a private range"
	case sharedSpace.Contains(a):
		return "shared address space"
	case hostAddrs()[a]:
		return "one of the host's own addresses"
	}
	return ""
}

// hostAddrs are the addresses of the host's interfaces (the init stage
// runs in the host's network namespace), read once.
var hostAddrs = sync.OnceValue(func() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
		rib, err := syscall.NetlinkRIB(unix.RTM_GETADDR, family)
		if err != nil {
			continue
		}
		msgs, err := syscall.ParseNetlinkMessage(rib)
		if err != nil {
			continue
		}
		for _, m := range msgs {
			if m.Header.Type != unix.RTM_NEWADDR {
				continue
			}
			attrs, err := syscall.ParseNetlinkRouteAttr(&m)
			if err != nil {
				continue
			}
			for _, at := range attrs {
				if at.Attr.Type != unix.IFA_ADDRESS && at.Attr.Type != unix.IFA_LOCAL {
					continue
				}
				if a, ok := netip.AddrFromSlice(at.Value); ok {
					out[a.Unmap()] = true
				}
			}
		}
	}
	return out
})

// dial connects to host:port from the host's network: an IP literal as
// is, a name through /etc/hosts, then the resolvers of /etc/resolv.conf.
// guard (when not nil) refuses addresses the name may not reach.
func dial(host string, port int, guard func(netip.Addr) error) (int, error) {
	addrs, err := lookup(host)
	if err != nil {
		return -1, err
	}
	var last error
	for _, a := range addrs {
		if guard != nil {
			if err := guard(a); err != nil {
				last = err
				continue
			}
		}
		var sa unix.Sockaddr
		family := unix.AF_INET
		if a.Is4() {
			sa = &unix.SockaddrInet4{Addr: a.As4(), Port: port}
		} else {
			family = unix.AF_INET6
			sa = &unix.SockaddrInet6{Addr: a.As16(), Port: port}
		}
		fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			last = err
			continue
		}
		tv := unix.Timeval{Sec: 10}
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
		// Retrying connect after EINTR got EALREADY: a failed dial.
		err = connectTCP(fd, sa, 10*time.Second)
		if err == nil {
			_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &unix.Timeval{})
			return fd, nil
		}
		unix.Close(fd)
		last = fmt.Errorf("connect %s: %v", netip.AddrPortFrom(a, uint16(port)), err)
	}
	if last == nil {
		last = fmt.Errorf("%s has no address", host)
	}
	return -1, last
}

func lookup(host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if addrs := hostsFile(name); len(addrs) > 0 {
		return addrs, nil
	}
	return resolveDNS(name)
}

// hostsFile is name's addresses in /etc/hosts.
func hostsFile(name string) []netip.Addr {
	f, err := os.Open("/etc/hosts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []netip.Addr
	s := bufio.NewScanner(f)
	for s.Scan() {
		line, _, _ := strings.Cut(s.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		a, err := netip.ParseAddr(fields[0])
		if err != nil {
			continue
		}
		for _, n := range fields[1:] {
			if strings.EqualFold(strings.TrimSuffix(n, "."), name) {
				out = append(out, a.Unmap())
			}
		}
	}
	return out
}

// resolveDNS asks the nameservers of /etc/resolv.conf for name's A and
// AAAA records over UDP.
func resolveDNS(name string) ([]netip.Addr, error) {
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return nil, fmt.Errorf("cannot resolve %s: %v", name, err)
	}
	var servers []netip.Addr
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(f[1]); err == nil {
				servers = append(servers, a.Unmap())
			}
		}
	}
	qname, err := dnsmessage.NewName(name + ".")
	if err != nil {
		return nil, err
	}
	var last error = fmt.Errorf("cannot resolve %s: no nameserver", name)
	for _, srv := range servers {
		var out []netip.Addr
		for _, t := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
			addrs, err := queryDNS(srv, qname, t)
			if err != nil {
				last = err
				continue
			}
			out = append(out, addrs...)
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	return nil, last
}

func queryDNS(srv netip.Addr, name dnsmessage.Name, t dnsmessage.Type) ([]netip.Addr, error) {
	var idb [2]byte
	if _, err := unix.Getrandom(idb[:], 0); err != nil {
		return nil, err
	}
	id := binary.BigEndian.Uint16(idb[:])
	msg := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: name, Type: t, Class: dnsmessage.ClassINET}},
	}
	q, err := msg.Pack()
	if err != nil {
		return nil, err
	}
	family := unix.AF_INET
	var sa unix.Sockaddr = &unix.SockaddrInet4{Addr: srv.As4(), Port: 53}
	if srv.Is6() {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Addr: srv.As16(), Port: 53}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, sa); err != nil {
		return nil, err
	}
	tv := unix.Timeval{Sec: 3}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if _, err := unix.Write(fd, q); err != nil {
		return nil, err
	}
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %v", name, err)
		}
		var m dnsmessage.Message
		if m.Unpack(buf[:n]) != nil || m.Header.ID != id || !m.Header.Response {
			continue
		}
		var out []netip.Addr
		for _, a := range m.Answers {
			switch r := a.Body.(type) {
			case *dnsmessage.AResource:
				out = append(out, netip.AddrFrom4(r.A))
			case *dnsmessage.AAAAResource:
				out = append(out, netip.AddrFrom16(r.AAAA).Unmap())
			}
		}
		return out, nil
	}
}

// fromSandbox reports whether the client of c, a connection accepted on
// the host's loopback at port, is a socket that a process of this
// sandbox holds: its inode, from /proc/net/tcp, among the descriptors of
// /proc/PID/fd (this /proc shows the sandbox's processes only).
func fromSandbox(c, port int) bool {
	// Looked for again before a client is turned away: /proc/net/tcp is
	// made in pieces as it is read, from a table other processes change
	// meanwhile, and a line can be missed.
	for range 3 {
		if clientHolder(c, port, "/proc/net/tcp") > 0 {
			return true
		}
	}
	return false
}

// clientHolder is the pid of a process of this sandbox holding the client
// socket of c, a loopback connection accepted at port, found in the table
// netTCP (the network namespace's /proc/.../net/tcp); 0 when none is.
func clientHolder(c, port int, netTCP string) int {
	sa, err := unix.Getpeername(c)
	if err != nil {
		return 0
	}
	peer, ok := sa.(*unix.SockaddrInet4)
	if !ok || peer.Addr != [4]byte{127, 0, 0, 1} {
		return 0
	}
	b, err := os.ReadFile(netTCP)
	if err != nil {
		return 0
	}
	local := fmt.Sprintf("0100007F:%04X", peer.Port)
	remote := fmt.Sprintf("0100007F:%04X", port)
	inode := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 10 && f[1] == local && f[2] == remote {
			inode = f[9]
			break
		}
	}
	if inode == "" || inode == "0" {
		return 0
	}
	want := "socket:[" + inode + "]"
	procs, _ := filepath.Glob("/proc/[0-9]*/fd")
	for _, dir := range procs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == want {
				pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(dir, "/proc/"), "/fd"))
				return pid
			}
		}
	}
	return 0
}

// clientProgram names the child that opened c, a connection to the proxy
// inside the children's network namespace, for the violation line: the
// supervisor made that connect for it and noted its name by the local port.
// "(proxy client)" when it cannot be told.
func (p *Proxy) clientProgram(c int) [2]string {
	sa, err := unix.Getpeername(c)
	if err == nil {
		if who, ok := p.cnet.Client(sa); ok {
			return who
		}
	}
	return [2]string{"(proxy client)", ""}
}

// net2 is host:port as the event log spells an address.
func net2(host string, port int) string {
	return host + ":" + strconv.Itoa(port)
}
