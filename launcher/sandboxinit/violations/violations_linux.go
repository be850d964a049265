package violations

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/eventlog"
	"grok-sandbox/launcher/seccomp"
)

// Log logs blocked attempts to the event log, rate-limited so that a
// loop cannot flood it: at most one line per process name, syscall and
// message (which names the destination) a second, and at most
// maxViolations lines per run. The supervisor never
// waits for the log: lines go to a queue that a writer drains, and a full
// queue drops them. A connect to a Unix socket path that does not exist in
// the sandbox is refused without a line (see ConnectToMissingPath).
type Log struct {
	profile string
	backend string
	arch    seccomp.Arch
	mu      sync.Mutex
	last    map[string]time.Time
	logged  int
	// size is the bytes of the lines queued so far (at most maxBytes).
	size int
	// bytesHit is whether the byte bound left a line out (the summary
	// says which bound did).
	bytesHit bool
	// dropped counts the lines the rate limit or the cap left out; Flush
	// logs one summary line when any were.
	dropped int
	// AddrOf reads the address a network call names (nil: nobody can).
	// Set once, before the first notification is answered.
	AddrOf func(seccomp.Notification) (address, family string)
	// netRefused counts the refused network attempts, netFirst says what
	// the first was (see SayRefusedNetwork).
	netRefused int
	netFirst   string
	closed     bool // flushed: later violations are not logged
	// full is set once no violation line can be queued any more (the cap,
	// the byte bound, or the flush): see Full.
	full    atomic.Bool
	queue   chan eventlog.Event
	written chan struct{}
}

const maxViolations = 100

// maxBytes bounds the violation lines of one run: a process in the sandbox
// chooses what some fields hold (where its program lies, a path it
// touched: up to 4 KiB each, and a control byte takes six in JSON), and
// 100 lines of those could otherwise push the log's earlier lines out at
// its next rotation (1 MiB). Lines past it are counted in the summary.
const maxBytes = 256 << 10

// maxField bounds, in bytes of JSON, a field a process chooses (see Clip).
const maxField = 512

// Clip cuts s so that its JSON text (escapes counted: a control byte
// takes six) is at most limit bytes, marking a cut with the size it had.
func Clip(s string, limit int) string {
	total := 0
	for _, r := range s {
		total += jsonCost(r)
	}
	if total <= limit {
		return s
	}
	mark := fmt.Sprintf("...(%d bytes)", len(s))
	size := 0
	for i, r := range s {
		n := jsonCost(r)
		if size+n > limit-len(mark) {
			return s[:i] + mark
		}
		size += n
	}
	return s
}

// jsonCost is at most how many bytes encoding/json writes for r.
func jsonCost(r rune) int {
	switch {
	case r < 0x20 || r == 0x7f || r == utf8.RuneError || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029:
		return 6
	case r == '"' || r == '\\':
		return 2
	}
	return utf8.RuneLen(r)
}

// New starts the writer for events, the event log's descriptor
// opened before the sandbox started (-1: there is none, nothing is logged).
func New(profile, backend string, events int, arch seccomp.Arch) *Log {
	v := &Log{profile: profile, backend: backend, arch: arch, last: map[string]time.Time{},
		queue: make(chan eventlog.Event, 256), written: make(chan struct{})}
	go func() {
		defer close(v.written)
		// Anything in the sandbox can hold the log's lock (the log is
		// readable there): once a line could not get it in time, the rest
		// are written without waiting for it, and a line says so.
		//
		// A write that fails for another reason (a full disk, a file size
		// limit) is said once: a degraded line if one can still be
		// written, else a line on the command's stderr; the run goes on,
		// and later lines are tried all the same.
		held, failed := false, false
		for ev := range v.queue {
			if events < 0 {
				continue
			}
			var err error
			if held {
				err = eventlog.AppendFDUnlocked(events, ev)
			} else if err = eventlog.AppendFD(events, ev); errors.Is(err, eventlog.ErrLocked) {
				held = true
				_ = eventlog.AppendFDUnlocked(events, eventlog.Event{Time: eventlog.Now(), Event: "degraded", Profile: profile, Backend: backend,
					Message: "the event log was kept locked by a process in the sandbox: this run's lines are written without the lock"})
				err = eventlog.AppendFDUnlocked(events, ev)
			}
			if err != nil && !failed {
				failed = true
				msg := fmt.Sprintf("the event log could not be written (%v): lines of this run may be missing", err)
				if eventlog.AppendFDUnlocked(events, eventlog.Event{Time: eventlog.Now(), Event: "degraded", Profile: profile, Backend: backend, Message: msg}) != nil {
					fmt.Fprintf(os.Stderr, "grok-sandbox: warning: %s\n", msg)
				}
			}
		}
	}()
	return v
}

// Flush logs the summary line (when the rate limit or the cap left lines
// out) and waits, a bounded time, for the queued lines to be written.
func (v *Log) Flush() {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return
	}
	v.closed = true
	v.full.Store(true)
	if v.dropped > 0 {
		ev := eventlog.Event{Time: eventlog.Now(), Event: "violation_summary", Profile: v.profile, Backend: v.backend,
			Message: fmt.Sprintf("%d more violations were not logged (at most one a second per program, path and operation, and %d lines or %d KiB a run%s); %d %s logged", v.dropped, maxViolations, maxBytes>>10, map[bool]string{true: ": the size bound was reached", false: ""}[v.bytesHit], v.logged, map[bool]string{true: "was", false: "were"}[v.logged == 1])}
		select {
		case v.queue <- ev:
		default:
		}
	}
	close(v.queue)
	v.mu.Unlock()
	// The writer waits for the log's lock once, at most LockWait, and
	// writes without it from then on: every queued line is written soon.
	select {
	case <-v.written:
	case <-time.After(DrainWait):
	}
}

// Record logs n, a network call the supervisor refused, about its caller
// (rate-limited); a connect to a Unix socket path that does not exist is
// not logged.
func (v *Log) Record(n seccomp.Notification) {
	name := seccomp.SyscallName(v.arch, n.Nr)
	if name == "connect" && ConnectToMissingPath(n.Pid, n.Args[1], n.Args[2]) {
		return // refused all the same; nothing was there to reach
	}
	what := name
	if name == "socket" || name == "socketpair" {
		family, typ, proto := int(int32(n.Args[0])), int(int32(n.Args[1]))&0xf, int(int32(n.Args[2]))
		what = fmt.Sprintf("%s(%s, %s)", name, FamilyName(family), TypeName(typ))
		switch {
		case family == unix.AF_UNIX && proto == 0 && !seccomp.UnixStreamType(typ):
			// Not the network: a kind of socket no child may have (the
			// kernel makes a raw Unix socket a datagram one). Say which,
			// and what works instead (see SayRefusedNetwork).
			v.RecordMsg(n, fmt.Sprintf("blocked %s: %s", what, DatagramUnixRefused))
			return
		case !seccomp.ChildFamily(family, proto):
			// A kind no allow_hosts entry has anything to do with (a
			// test suite probing for CAN or packet sockets, say).
			if family == unix.AF_NETLINK || family == unix.AF_UNIX {
				what = fmt.Sprintf("%s(%s, %s, protocol %d)", name, FamilyName(family), TypeName(typ), proto)
			}
			v.RecordMsg(n, fmt.Sprintf("blocked %s: %s", what, FamilyRefused))
			return
		}
	}
	v.RecordMsg(n, fmt.Sprintf("blocked %s: processes started by the wrapped command have no network", what))
}

// DatagramUnixRefused says why a child's datagram Unix socket is refused
// where pid 1 does not make the children's sends (README: help network):
// the destination of a datagram sent with sendmsg is out of a seccomp
// filter's sight, and could be any host socket.
const DatagramUnixRefused = "Unix stream and seqpacket sockets work here, datagram ones do not in this sandbox (a datagram's destination is out of a filter's sight and could be a host socket; where pid 1 makes the children's sends, under bwrap on Linux 5.19 or later, they do)"

// FamilyRefused says why a socket of a kind other than IP, netlink route
// and Unix is refused.
const FamilyRefused = "the sandbox gives IP, netlink route and Unix sockets (stream, seqpacket and, where pid 1 makes their sends, datagram), of no other kind"

// TypeName names a socket type (without its flags).
func TypeName(t int) string {
	switch t {
	case unix.SOCK_STREAM:
		return "stream"
	case unix.SOCK_DGRAM:
		return "datagram"
	case unix.SOCK_SEQPACKET:
		return "seqpacket"
	case unix.SOCK_RAW:
		return "raw"
	}
	return "type " + strconv.Itoa(t)
}

// RecordMsg logs msg about n's caller, rate-limited like Record.
func (v *Log) RecordMsg(n seccomp.Notification, msg string) {
	name := seccomp.SyscallName(v.arch, n.Nr)
	comm := "?"
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", n.Pid)); err == nil {
		comm = strings.TrimSpace(string(b))
	}
	v.countNetwork(comm, msg)
	ev := eventlog.Event{Command: comm, Exe: ExeOf(fmt.Sprintf("/proc/%d", n.Pid)), Message: msg, Op: name}
	if v.AddrOf != nil {
		ev.Address, ev.Family = v.AddrOf(n)
	}
	if ev.Family == "" && (name == "socket" || name == "socketpair") {
		ev.Family = FamilyName(int(int32(n.Args[0])))
	}
	// Per destination too: one line a second for each thing tried.
	v.queueEvent(comm+"/"+name+"/"+msg, ev)
}

// countNetwork counts a refused network attempt of program comm, for the
// one line the run ends with (SayRefusedNetwork).
func (v *Log) countNetwork(comm, msg string) {
	// Not a connect that found nothing listening on the children's own
	// loopback: that is what a closed port always answers.
	if !strings.HasPrefix(msg, "blocked ") && !strings.Contains(msg, "not in allow_hosts") {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.netRefused == 0 {
		v.netFirst = fmt.Sprintf("%s (%s)", msg, comm)
	}
	v.netRefused++
}

// SayRefusedNetwork tells, on the command's stderr, once at the end of a
// run, that network attempts of the command's children were refused: a
// tool that retries (npm's EAI_AGAIN for a minute) otherwise reads as a
// network outage, and the cause is only in the event log.
func (v *Log) SayRefusedNetwork(isolated bool) {
	v.mu.Lock()
	n, first := v.netRefused, v.netFirst
	v.mu.Unlock()
	if n == 0 {
		return
	}
	who, fix := "processes the wrapped command started", "list the hosts they need in allow_hosts of a custom profile (see `grok-sandbox help network`)"
	switch {
	case strings.Contains(first, DatagramUnixRefused):
		// No profile key grants one: say what works.
		fix = "use a Unix stream or seqpacket socket, or a profile without restrict_network (see `grok-sandbox help network`)"
	case strings.Contains(first, FamilyRefused):
		fix = "run the program as the wrapped command itself, or under a profile without restrict_network (see `grok-sandbox help network`)"
	case strings.Contains(first, "unix:"):
		// A host Unix socket: no allow_hosts entry reaches one.
		fix = "let the wrapped command itself make the connection, or run the service inside the sandbox (see `grok-sandbox help network`)"
	}
	if isolated {
		who, fix = "processes in the sandbox", "run without --isolate-network"
		if strings.Contains(first, DatagramUnixRefused) {
			fix = "use a Unix stream or seqpacket socket, or run without --isolate-network (the wrapped command's own datagram sockets work then)"
		}
	}
	attempts := "attempts were"
	if n == 1 {
		attempts = "attempt was"
	}
	fmt.Fprintf(os.Stderr, "grok-sandbox: %d network %s refused to %s (the first: %s); to allow them, %s; every refusal is in the event log\n",
		n, attempts, who, printableMsg(first), fix)
}

// printableMsg is msg cut to one short line for the terminal.
func printableMsg(msg string) string {
	msg = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, msg)
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return msg
}

// queueEvent queues ev (a violation) unless the rate limit or the cap says
// otherwise.
func (v *Log) queueEvent(key string, ev eventlog.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	now := time.Now()
	if v.logged >= maxViolations || now.Sub(v.last[key]) < time.Second {
		v.dropped++
		return
	}
	if v.size >= maxBytes {
		v.dropped++
		v.bytesHit = true
		v.full.Store(true)
		return
	}
	ev.Time, ev.Event, ev.Profile, ev.Backend = eventlog.Now(), "violation", v.profile, v.backend
	// What a process in the sandbox chooses (where its program lies, an
	// address it gave the proxy) is cut first, so that 100 lines fit the
	// byte bound whatever those are made of; the bound is the backstop.
	ev.Exe, ev.Address, ev.Message = Clip(ev.Exe, maxField), Clip(ev.Address, maxField), Clip(ev.Message, 2*maxField)
	line, err := json.Marshal(ev)
	if err != nil || v.size+len(line) > maxBytes {
		v.dropped++
		v.bytesHit = true
		return
	}
	v.size += len(line)
	v.last[key] = now
	v.logged++
	if v.logged >= maxViolations || v.size >= maxBytes {
		v.full.Store(true)
	}
	select {
	case v.queue <- ev:
	default:
		v.dropped++
	}
}

// LogFile queues a touch of a denied or protected path: one line a second
// per program, path and operation.
func (v *Log) LogFile(fv File) {
	what := "denied path"
	if fv.Protected {
		what = "protected path"
	}
	msg := fmt.Sprintf("blocked %s of %s %s (%s)", fv.Op, what, fv.Path, fv.Entry)
	v.queueEvent(fv.Comm+"/"+fv.Op+"/"+fv.Path, eventlog.Event{Command: fv.Comm, Exe: fv.Exe, Message: msg,
		Op: fv.Op, Path: fv.Path, Entry: fv.Entry, Source: fv.Source})
}

// Full reports whether no violation line can be logged any more in this
// run: the cap of lines or the byte bound is reached, or the log is
// flushed. It stays so. Past it a violation is only counted (Lost), so
// that whoever observes one can skip reading what a line would say.
func (v *Log) Full() bool { return v.full.Load() }

// Lost counts n violations that never reached the log.
func (v *Log) Lost(n int) {
	if n > 0 {
		v.mu.Lock()
		v.dropped += n
		v.mu.Unlock()
	}
}

// Notice logs one line about the observation itself (not rate-limited,
// not counted).
func (v *Log) Notice(msg string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	ev := eventlog.Event{Time: eventlog.Now(), Event: "degraded", Profile: v.profile, Backend: v.backend, Message: msg}
	select {
	case v.queue <- ev:
	default:
	}
}

// RecordProxy logs a refusal of the proxy for program who (its name and
// what it runs), rate-limited like the others.
func (v *Log) RecordProxy(who [2]string, method, address, msg string) {
	if v == nil {
		return
	}
	v.countNetwork(who[0], msg)
	v.queueEvent(who[0]+"/proxy/"+msg, eventlog.Event{Command: who[0], Exe: who[1], Message: msg, Op: method, Address: address, Family: "inet"})
}

// File is one touch of a denied or protected path, as an observer reports
// it: the mask observer (launcher/sandboxinit/maskfs) sends it to the init
// stage as JSON, the path observer (launcher/sandboxinit/pathwatch) logs it
// at once; LogFile logs it (rate-limited).
type File struct {
	Comm string `json:"comm"`
	// Exe is the program the caller runs, as the kernel names it
	// (/proc/PID/exe): unlike Comm, which any process sets for itself,
	// only an exec changes it.
	Exe    string `json:"exe,omitempty"`
	Op     string `json:"op"`
	Path   string `json:"path"`
	Entry  string `json:"entry"`
	Source string `json:"source,omitempty"`
	// Protected: the path is protected (read-only), not denied.
	Protected bool `json:"protected,omitempty"`
	// Lost counts the violations before this one that could not be sent.
	Lost int `json:"lost,omitempty"`
}

// ExeOf is the program /proc/PID (dir) runs, as the kernel names it; ""
// when it cannot be read: what a violation line names as the program
// (unlike its comm, which any process sets for itself).
func ExeOf(dir string) string {
	exe, err := os.Readlink(dir + "/exe")
	if err != nil {
		return ""
	}
	return exe
}

// FamilyName is an address family as the event log spells it.
func FamilyName(f int) string {
	switch f {
	case unix.AF_INET:
		return "inet"
	case unix.AF_INET6:
		return "inet6"
	case unix.AF_UNIX:
		return "unix"
	case unix.AF_NETLINK:
		return "netlink"
	case unix.AF_PACKET:
		return "packet"
	case unix.AF_CAN:
		return "can"
	case unix.AF_BLUETOOTH:
		return "bluetooth"
	case unix.AF_VSOCK:
		return "vsock"
	case unix.AF_ALG:
		return "alg"
	case unix.AF_TIPC:
		return "tipc"
	case unix.AF_XDP:
		return "xdp"
	}
	return "family " + strconv.Itoa(f)
}

// DrainWait bounds the wait, at the end of a run, for the queued lines to
// be written (Flush), and for the mask observer's reports already sent to
// be read (far above what a loaded machine takes).
const DrainWait = 10 * time.Second
