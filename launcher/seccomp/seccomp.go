// Package seccomp builds and installs the seccomp-bpf filters used by the
// launcher for two promises:
//
//   - terminal injection: ioctl(TIOCSTI) and ioctl(TIOCLINUX) fail with EPERM
//     for every process in the sandbox;
//   - restrict_network: the wrapped command keeps its network, but every
//     process it starts (at any depth) cannot create IP (or any non-Unix)
//     sockets, cannot connect any socket (so no host Unix socket, no abstract
//     socket), cannot make datagram Unix sockets (whose sendmsg msg_name a
//     filter cannot inspect), cannot take over the wrapped command's sockets
//     or memory (ptrace, process_vm_*, pidfd_getfd) and cannot use io_uring.
//
// In NetworkNotify mode those "network" syscalls return
// SECCOMP_RET_USER_NOTIF and a supervisor (see SuperviseUntil, linux only) lets
// them through for the wrapped command's thread group and fails them with
// EACCES for everyone else. In NetworkDeny mode (no supervisor) they fail
// with EACCES for everyone.
//
// Not covered by the filter (a filter cannot see paths or fd provenance):
// sockets a child inherits or receives (SCM_RIGHTS) from the wrapped
// command, and writing the wrapped command's memory through
// /proc/<pid>/mem, which only needs ptrace access (same uid, Yama
// ptrace_scope 0); ptrace_scope >= 1 or a non-dumpable wrapped command
// closes that.
//
// Build is portable (it only produces instructions), so the programs can be
// inspected and run in golang.org/x/net/bpf's VM on any host, for any of the
// supported architectures.
//
// Architecture handling: the program first checks seccomp_data.arch. Any
// architecture other than the native one (for example i386 via int 0x80 on
// x86_64) gets ERRNO(EPERM) for every syscall, and on x86_64 so does the x32
// ABI (nr has bit 0x40000000 set): the rules are written for native syscall
// numbers, and a compat syscall would bypass them. ERRNO rather than
// KILL_PROCESS was chosen so that a (rare) compat caller fails visibly with
// an error instead of dying without explanation; either way nothing
// gets through.
package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
)

// Network selects the network rules of the filter.
type Network int

const (
	// NetworkUnfiltered adds no network rules.
	NetworkUnfiltered Network = iota
	// NetworkNotify sends the network syscalls to a user-space supervisor
	// (SECCOMP_RET_USER_NOTIF).
	NetworkNotify
	// NetworkDeny fails the network syscalls with EACCES for everyone.
	NetworkDeny
)

func (n Network) String() string {
	switch n {
	case NetworkUnfiltered:
		return "unfiltered"
	case NetworkNotify:
		return "notify"
	case NetworkDeny:
		return "deny"
	}
	return fmt.Sprintf("Network(%d)", int(n))
}

// Rules says what the filter enforces.
type Rules struct {
	// BlockTerminalInjection fails ioctl(TIOCSTI) and ioctl(TIOCLINUX) with
	// EPERM.
	BlockTerminalInjection bool
	// Network selects the network rules.
	Network Network
	// UnixSocketsNotify (with NetworkNotify) makes socket() of every
	// family notify, Unix stream and seqpacket sockets too (socketpair
	// stays allowed): the supervisor then gives the command's children
	// Unix sockets of their private network namespace, whose abstract
	// names are theirs alone.
	UnixSocketsNotify bool
	// PassCredNotify (with NetworkNotify) makes setsockopt(SOL_SOCKET,
	// SO_PASSCRED or SO_PASSPIDFD) notify: on a Unix socket of the host's
	// network namespace (a child's socketpair is the kernel's) the next
	// send would bind an automatic abstract name there.
	PassCredNotify bool
	// SendNotify (with NetworkNotify and UnixSocketsNotify) makes sendmsg
	// and sendmmsg notify too, and lets socketpair make Unix datagram
	// pairs: the supervisor then makes every send that can carry an
	// address itself, with the address checked (a datagram socket's
	// destination is in memory no filter reads), so that the children may
	// have Unix datagram sockets of their own.
	SendNotify bool
	// BlockUserNamespaces fails clone and unshare with CLONE_NEWUSER
	// (EPERM) and clone3, whose flags a filter cannot read, with ENOSYS so
	// that libc falls back to clone. Without a user namespace nothing in
	// the sandbox can gain the capabilities to rearrange its mounts.
	BlockUserNamespaces bool
	// BlockKeyring fails add_key, request_key and keyctl with EPERM: the
	// kernel keyring is not namespaced, so a sandboxed process could
	// otherwise read the keys of the session that launched it.
	BlockKeyring bool
	// BlockIOURing fails io_uring_setup, io_uring_enter and
	// io_uring_register with EPERM whatever Network says: io_uring runs
	// socket operations that no filter sees.
	BlockIOURing bool
	// BlockSetID fails, with EPERM, every mode change or file creation
	// whose mode has S_ISUID or S_ISGID (chmod, fchmod, fchmodat,
	// fchmodat2; open, openat, creat, mknod, mknodat), and openat2, whose
	// mode a filter cannot read, with ENOSYS so that libc falls back to
	// openat. Without it a sandbox started by root could leave a setuid
	// root program in a writable grant for any user of the host to run.
	BlockSetID bool
	// GuardOthers fails, with EPERM, every change of another process's
	// resource limits (prlimit64 with a pid and a new limit), scheduling
	// (sched_setscheduler, sched_setparam, sched_setattr with a pid), CPU
	// affinity (sched_setaffinity with a pid), priority (setpriority other
	// than PRIO_PROCESS of the caller) or I/O priority (ioprio_set other
	// than IOPRIO_WHO_PROCESS of the caller), and every fault signal
	// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS) sent with a siginfo
	// of the sender's (rt_sigqueueinfo, rt_tgsigqueueinfo,
	// pidfd_send_signal with one, or fcntl F_SETSIG: I/O signals). Every
	// process in a sandbox has the uid
	// of pid 1 and its helpers, which is all the kernel checks for these:
	// without the rule a child could starve them, shrink their limits (no
	// file descriptors, no file size: no event log), or crash the Go
	// runtime, which takes a queued SIGSEGV for a real fault.
	GuardOthers bool
	// PriorityToCommand (with GuardOthers) lets setpriority with
	// PRIO_PROCESS and a pid through, for the command's own filter to
	// decide (PriorityNotify): the base filter cannot tell a caller's own
	// pid from pid 1's. Every other which stays refused.
	PriorityToCommand bool
	// PriorityNotify sends setpriority with PRIO_PROCESS and a pid to the
	// supervisor, which lets it through for a thread of the caller's own
	// process only (CPython's os.setpriority(PRIO_PROCESS, os.getpid(), …));
	// another which, with a pid, fails with EPERM.
	PriorityNotify bool
	// OwnIDs, when set, fails with EPERM every uid or gid change and every
	// chown naming a uid or gid other than these (or -1, "unchanged"):
	// in a user namespace that maps only the caller's own ids the kernel
	// answers EINVAL for any other, which programs take for a bad
	// argument (CPython's subprocess with user= or group= raises
	// it; its tests expect EPERM), where outside, for an ordinary user, the
	// same call fails with EPERM.
	OwnIDs *IDs
	// Observe sends the syscalls the file observer logs to the supervisor
	// (USER_NOTIF), which lets every one go on. Not with BlockSetID, which
	// decides open and creat first.
	Observe Observe
}

// IDs are a uid and a gid.
type IDs struct{ UID, GID uint32 }

// idArgs are the syscalls OwnIDs checks, each with the arguments that
// hold a uid or a gid. setfsuid and setfsgid are left out: they report no
// error, only the previous id.
var idArgs = []struct {
	name string
	args []idArg
}{
	{"setuid", []idArg{{0, false}}}, {"setreuid", []idArg{{0, false}, {1, false}}}, {"setresuid", []idArg{{0, false}, {1, false}, {2, false}}},
	{"setgid", []idArg{{0, true}}}, {"setregid", []idArg{{0, true}, {1, true}}}, {"setresgid", []idArg{{0, true}, {1, true}, {2, true}}},
	{"chown", []idArg{{1, false}, {2, true}}}, {"lchown", []idArg{{1, false}, {2, true}}},
	{"fchown", []idArg{{1, false}, {2, true}}}, {"fchownat", []idArg{{2, false}, {3, true}}},
}

// idArg is an argument holding a uid, or a gid.
type idArg struct {
	arg int
	gid bool
}

// modeArg is the argument that holds the mode of each syscall BlockSetID
// checks.
var modeArg = map[string]int{
	"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2,
	"open": 2, "openat": 3, "creat": 1, "mknod": 1, "mknodat": 2,
}

// Arch is a Go architecture name ("amd64", "arm64").
type Arch string

// Supported architectures.
const (
	ArchAMD64 Arch = "amd64"
	ArchARM64 Arch = "arm64"
)

// HostArch returns the architecture the binary was built for, or an error
// when the filter has no syscall table for it.
func HostArch() (Arch, error) {
	a := Arch(runtime.GOARCH)
	if _, ok := tables[a]; !ok {
		return "", fmt.Errorf("seccomp: unsupported architecture %q", runtime.GOARCH)
	}
	return a, nil
}

// Filter return values (linux/seccomp.h).
const (
	RetKillProcess uint32 = 0x80000000
	RetErrno       uint32 = 0x00050000
	RetUserNotif   uint32 = 0x7fc00000
	RetAllow       uint32 = 0x7fff0000
	RetActionFull  uint32 = 0xffff0000
	RetData        uint32 = 0x0000ffff
)

// Linux values, independent of the build OS (Build is portable).
const (
	errnoEPERM  = 1
	errnoEACCES = 13
	errnoENOSYS = 38

	cloneNewUser = 0x10000000
	modeSetID    = 0o6000 // S_ISUID | S_ISGID

	afUnix        = 1
	sockTypeMask  = 0xf
	sockStream    = 1
	sockSeqpacket = 5
	sockDgram     = 2
	sockRaw       = 3

	solSocket   = 1  // SOL_SOCKET
	soPassCred  = 16 // SO_PASSCRED
	soPassPidfd = 76 // SO_PASSPIDFD

	tiocsti   = 0x5412
	tioclinux = 0x541c

	auditArchX86_64  = 0xc000003e
	auditArchAArch64 = 0xc00000b7

	x32SyscallBit = 0x40000000
)

// Offsets in struct seccomp_data (little-endian hosts only: the low 32-bit
// half of an argument is at the argument's offset).
const (
	offNr   = 0
	offArch = 4
)

func offArgLow(i int) uint32  { return 16 + 8*uint32(i) }
func offArgHigh(i int) uint32 { return 16 + 8*uint32(i) + 4 }

// table is the per-architecture data the builder needs.
type table struct {
	auditArch uint32
	x32Bit    bool // refuse syscalls with x32SyscallBit set
	nr        map[string]int32
}

var tables = map[Arch]table{
	ArchAMD64: {
		auditArch: auditArchX86_64,
		x32Bit:    true,
		nr: map[string]int32{
			"read":               0,
			"write":              1,
			"ioctl":              16,
			"clone":              56,
			"unshare":            272,
			"clone3":             435,
			"fcntl":              72,
			"prlimit64":          302,
			"sched_setaffinity":  203,
			"sched_setscheduler": 144,
			"sched_setparam":     142,
			"sched_setattr":      314,
			"setpriority":        141,
			"ioprio_set":         251,
			"rt_sigqueueinfo":    129,
			"rt_tgsigqueueinfo":  297,
			"pidfd_send_signal":  424,
			"socket":             41,
			"connect":            42,
			"sendto":             44,
			"sendmsg":            46,
			"socketpair":         53,
			"setsockopt":         54,
			"ptrace":             101,
			"openat":             257,
			"sendmmsg":           307,
			"process_vm_readv":   310,
			"process_vm_writev":  311,
			"io_uring_setup":     425,
			"io_uring_enter":     426,
			"io_uring_register":  427,
			"pidfd_getfd":        438,
			"add_key":            248,
			"request_key":        249,
			"keyctl":             250,
			"bind":               49,
			"listen":             50,
			"open":               2,
			"creat":              85,
			"chmod":              90,
			"fchmod":             91,
			"mknod":              133,
			"mknodat":            259,
			"fchmodat":           268,
			"openat2":            437,
			"fchmodat2":          452,
			// Named in the file observer's filter and its reports.
			"stat":        4,
			"lstat":       6,
			"access":      21,
			"execve":      59,
			"truncate":    76,
			"chdir":       80,
			"rename":      82,
			"mkdir":       83,
			"rmdir":       84,
			"link":        86,
			"unlink":      87,
			"symlink":     88,
			"readlink":    89,
			"chown":       92,
			"lchown":      94,
			"fchown":      93,
			"setuid":      105,
			"setgid":      106,
			"setreuid":    113,
			"setregid":    114,
			"setresuid":   117,
			"setresgid":   119,
			"getxattr":    191,
			"lgetxattr":   192,
			"listxattr":   194,
			"llistxattr":  195,
			"mkdirat":     258,
			"fchownat":    260,
			"newfstatat":  262,
			"unlinkat":    263,
			"renameat":    264,
			"linkat":      265,
			"symlinkat":   266,
			"readlinkat":  267,
			"faccessat":   269,
			"utimensat":   280,
			"renameat2":   316,
			"execveat":    322,
			"statx":       332,
			"faccessat2":  439,
			"fchdir":      81,
			"userfaultfd": 323,
		},
	},
	ArchARM64: {
		auditArch: auditArchAArch64,
		nr: map[string]int32{
			"ioctl":              29,
			"openat":             56,
			"unshare":            97,
			"clone":              220,
			"clone3":             435,
			"fcntl":              25,
			"prlimit64":          261,
			"sched_setaffinity":  122,
			"sched_setscheduler": 119,
			"sched_setparam":     118,
			"sched_setattr":      274,
			"setpriority":        140,
			"ioprio_set":         30,
			"rt_sigqueueinfo":    138,
			"rt_tgsigqueueinfo":  240,
			"pidfd_send_signal":  424,
			"read":               63,
			"write":              64,
			"ptrace":             117,
			"socket":             198,
			"socketpair":         199,
			"connect":            203,
			"setsockopt":         208,
			"sendto":             206,
			"sendmsg":            211,
			"sendmmsg":           269,
			"process_vm_readv":   270,
			"process_vm_writev":  271,
			"io_uring_setup":     425,
			"io_uring_enter":     426,
			"io_uring_register":  427,
			"pidfd_getfd":        438,
			"add_key":            217,
			"request_key":        218,
			"keyctl":             219,
			"bind":               200,
			"listen":             201,
			"mknodat":            33,
			"fchmod":             52,
			"fchmodat":           53,
			"openat2":            437,
			"fchmodat2":          452,
			"getxattr":           8,
			"lgetxattr":          9,
			"listxattr":          11,
			"llistxattr":         12,
			"mkdirat":            34,
			"unlinkat":           35,
			"symlinkat":          36,
			"linkat":             37,
			"renameat":           38,
			"truncate":           45,
			"faccessat":          48,
			"chdir":              49,
			"fchownat":           54,
			"fchown":             55,
			"setregid":           143,
			"setgid":             144,
			"setreuid":           145,
			"setuid":             146,
			"setresuid":          147,
			"setresgid":          149,
			"readlinkat":         78,
			"newfstatat":         79,
			"utimensat":          88,
			"execve":             221,
			"renameat2":          276,
			"execveat":           281,
			"statx":              291,
			"faccessat2":         439,
			"fchdir":             50,
			"userfaultfd":        282,
		},
	},
}

// SyscallNr returns the number of syscall name on arch, if this package
// knows it.
func SyscallNr(arch Arch, name string) (int32, bool) {
	n, ok := tables[arch].nr[name]
	return n, ok
}

// SyscallName returns the name of syscall nr on arch for event-log messages
// ("socket", "connect", ...), or "syscall_<nr>" when this package does not
// know it.
func SyscallName(arch Arch, nr int32) string {
	if t, ok := tables[arch]; ok {
		for name, n := range t.nr {
			if n == nr {
				return name
			}
		}
	}
	return fmt.Sprintf("syscall_%d", nr)
}

// NetworkSyscalls lists the syscalls that Rules.Network subjects to the
// supervisor (NetworkNotify) or refuses (NetworkDeny); socket, socketpair
// and sendto only for some arguments (see Build).
var NetworkSyscalls = []string{
	"socket", "socketpair", "connect", "sendto", "bind", "listen",
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
}

// IOURingSyscalls fail with EPERM whenever Rules.Network != NetworkUnfiltered or
// Rules.BlockIOURing is set.
var IOURingSyscalls = []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}

// KeyringSyscalls fail with EPERM when Rules.BlockKeyring is set.
var KeyringSyscalls = []string{"add_key", "request_key", "keyctl"}

// Build returns the filter program for r on arch.
//
// The program (all loads are 32-bit words of struct seccomp_data):
//
//	arch != native                        -> ERRNO(EPERM)
//	amd64: nr & 0x40000000 (x32 ABI)      -> ERRNO(EPERM)
//	ioctl, low32(args[1]) in {TIOCSTI, TIOCLINUX} -> ERRNO(EPERM)   [BlockTerminalInjection]
//	clone/unshare, low32(args[0]) & CLONE_NEWUSER -> ERRNO(EPERM)   [BlockUserNamespaces]
//	clone3                                -> ERRNO(ENOSYS)          [BlockUserNamespaces]
//	add_key/request_key/keyctl            -> ERRNO(EPERM)           [BlockKeyring]
//	io_uring_setup/enter/register         -> ERRNO(EPERM)           [BlockIOURing or Network != None]
//	chmod & co., open & co., low32(mode) & (S_ISUID|S_ISGID) -> ERRNO(EPERM) [BlockSetID]
//	openat2                               -> ERRNO(ENOSYS)          [BlockSetID]
//	prlimit64, args[0] != 0 && args[2] != 0 -> ERRNO(EPERM)         [GuardOthers]
//	sched_set{affinity,scheduler,param,attr}, args[0] != 0 -> ERRNO(EPERM) [GuardOthers]
//	setpriority/ioprio_set not of the caller itself -> ERRNO(EPERM) [GuardOthers]
//	  (setpriority, PRIO_PROCESS with a pid: ALLOW [PriorityToCommand])
//	setpriority, who != 0: PRIO_PROCESS -> USER_NOTIF, else ERRNO(EPERM) [PriorityNotify]
//	rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal with a siginfo: a fault signal -> ERRNO(EPERM) [GuardOthers]
//	fcntl(F_SETSIG, a fault signal)       -> ERRNO(EPERM)           [GuardOthers]
//	set*uid/set*gid, chown & co., low32(an id) not in {own, -1} -> ERRNO(EPERM) [OwnIDs]
//	userfaultfd                           -> ERRNO(EPERM)           [Observe.Paths or NetworkNotify]
//	ObserverPathSyscalls                  -> USER_NOTIF             [Observe.Paths]
//	open, openat: low32(flags) & (O_WRONLY|O_RDWR|O_CREAT|O_TRUNC); creat -> USER_NOTIF [Observe.Writes]
//	socket, UnixSocketsNotify with NetworkNotify                 -> NET
//	setsockopt(SOL_SOCKET, SO_PASSCRED | SO_PASSPIDFD), PassCredNotify with NetworkNotify -> NET
//	socket/socketpair, low32(args[0]) != AF_UNIX                 -> NET
//	socket/socketpair(AF_UNIX), low32(args[1])&0xf not in {SOCK_STREAM, SOCK_SEQPACKET} -> NET
//	  (socketpair: SOCK_DGRAM and SOCK_RAW too, SendNotify with NetworkNotify)
//	connect, bind, listen                 -> NET
//	sendto, args[4] (dest_addr) != 0      -> NET
//	sendmsg, sendmmsg, SendNotify with NetworkNotify             -> NET
//	ptrace, process_vm_readv, process_vm_writev, pidfd_getfd -> NET
//	everything else                       -> ALLOW
//
// where NET is USER_NOTIF (NetworkNotify) or ERRNO(EACCES) (NetworkDeny).
//
// AF_UNIX types other than stream and seqpacket go to NET, not only
// SOCK_DGRAM: the kernel turns an AF_UNIX SOCK_RAW socket into a datagram
// socket. socketpair with a domain other than AF_UNIX (AF_TIPC supports it)
// goes to NET too.
func Build(r Rules, arch Arch) ([]bpf.RawInstruction, error) {
	t, ok := tables[arch]
	if !ok {
		return nil, fmt.Errorf("seccomp: unsupported architecture %q", arch)
	}
	if r.PriorityNotify && r.GuardOthers {
		return nil, errors.New("seccomp: PriorityNotify is for the command's own filter, not with GuardOthers")
	}
	sendNotify := r.SendNotify && r.Network == NetworkNotify
	if sendNotify && !r.UnixSocketsNotify {
		return nil, errors.New("seccomp: SendNotify goes with UnixSocketsNotify")
	}
	if r.PriorityToCommand && !r.GuardOthers {
		return nil, errors.New("seccomp: PriorityToCommand relaxes GuardOthers, which is not set")
	}
	var netRet uint32
	switch r.Network {
	case NetworkUnfiltered:
	case NetworkNotify:
		netRet = RetUserNotif
	case NetworkDeny:
		netRet = RetErrno | errnoEACCES
	default:
		return nil, fmt.Errorf("seccomp: unknown network mode %d", int(r.Network))
	}
	nr := func(name string) uint32 {
		n, ok := t.nr[name]
		if !ok {
			panic("seccomp: no number for " + name + " on " + string(arch))
		}
		return uint32(n)
	}

	var a asm
	a.load(offArch)
	a.jumpIf(bpf.JumpNotEqual, t.auditArch, "eperm", "")
	a.load(offNr)
	if t.x32Bit {
		a.jumpIf(bpf.JumpBitsSet, x32SyscallBit, "eperm", "")
	}
	if r.BlockTerminalInjection {
		a.jumpIf(bpf.JumpEqual, nr("ioctl"), "ioctl", "")
	}
	if r.BlockUserNamespaces {
		a.jumpIf(bpf.JumpEqual, nr("clone"), "newuser", "")
		a.jumpIf(bpf.JumpEqual, nr("unshare"), "newuser", "")
		a.jumpIf(bpf.JumpEqual, nr("clone3"), "enosys", "")
	}
	if r.BlockKeyring {
		for _, name := range KeyringSyscalls {
			a.jumpIf(bpf.JumpEqual, nr(name), "eperm", "")
		}
	}
	if r.BlockIOURing || r.Network != NetworkUnfiltered {
		for _, name := range IOURingSyscalls {
			a.jumpIf(bpf.JumpEqual, nr(name), "eperm", "")
		}
	}
	if r.BlockSetID {
		for _, name := range []string{"chmod", "fchmod", "fchmodat", "fchmodat2", "open", "openat", "creat", "mknod", "mknodat"} {
			if _, ok := t.nr[name]; ok {
				a.jumpIf(bpf.JumpEqual, nr(name), fmt.Sprintf("mode%d", modeArg[name]), "")
			}
		}
		a.jumpIf(bpf.JumpEqual, nr("openat2"), "enosys", "")
	}
	if r.GuardOthers {
		a.jumpIf(bpf.JumpEqual, nr("prlimit64"), "g_prlimit", "")
		for _, name := range []string{"sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"} {
			a.jumpIf(bpf.JumpEqual, nr(name), "g_pid0", "")
		}
		a.jumpIf(bpf.JumpEqual, nr("setpriority"), "g_prio", "")
		a.jumpIf(bpf.JumpEqual, nr("ioprio_set"), "g_ioprio", "")
		a.jumpIf(bpf.JumpEqual, nr("rt_sigqueueinfo"), "g_sig1", "")
		a.jumpIf(bpf.JumpEqual, nr("rt_tgsigqueueinfo"), "g_sig2", "")
		a.jumpIf(bpf.JumpEqual, nr("pidfd_send_signal"), "g_pidfd", "")
		a.jumpIf(bpf.JumpEqual, nr("fcntl"), "g_fcntl", "")
	}
	if r.OwnIDs != nil {
		for _, c := range idArgs {
			if n, ok := t.nr[c.name]; ok {
				a.jumpIf(bpf.JumpEqual, uint32(n), "id_"+c.name, "")
			}
		}
	}
	if r.PriorityNotify {
		a.jumpIf(bpf.JumpEqual, nr("setpriority"), "prio_notify", "")
	}
	if r.Observe.Paths || r.Network == NetworkNotify {
		// userfaultfd could make a page the supervisor reads (a path, an
		// address or a message in the caller's memory) block its reader
		// for as long as the caller likes.
		a.jumpIf(bpf.JumpEqual, nr("userfaultfd"), "eperm", "")
	}
	if r.Observe.Paths {
		if r.BlockSetID {
			return nil, errors.New("seccomp: the file observer's rules cannot go with BlockSetID")
		}
		for _, name := range ObserverPathSyscalls {
			if n, ok := t.nr[name]; ok {
				a.jumpIf(bpf.JumpEqual, uint32(n), "observe", "")
			}
		}
		if r.Observe.Writes {
			if n, ok := t.nr["open"]; ok {
				a.jumpIf(bpf.JumpEqual, uint32(n), "observe_flags1", "")
			}
			a.jumpIf(bpf.JumpEqual, nr("openat"), "observe_flags2", "")
			if n, ok := t.nr["creat"]; ok {
				a.jumpIf(bpf.JumpEqual, uint32(n), "observe", "")
			}
		}
	}
	if r.Network != NetworkUnfiltered {
		socketLabel := "socket"
		if r.UnixSocketsNotify && r.Network == NetworkNotify {
			socketLabel = "unixsocket"
		}
		a.jumpIf(bpf.JumpEqual, nr("socket"), socketLabel, "")
		if sendNotify {
			a.jumpIf(bpf.JumpEqual, nr("sendmsg"), "net", "")
			a.jumpIf(bpf.JumpEqual, nr("sendmmsg"), "net", "")
		}
		a.jumpIf(bpf.JumpEqual, nr("socketpair"), "socket", "")
		a.jumpIf(bpf.JumpEqual, nr("sendto"), "sendto", "")
		if r.PassCredNotify && r.Network == NetworkNotify {
			a.jumpIf(bpf.JumpEqual, nr("setsockopt"), "passcred", "")
		}
		for _, name := range []string{"connect", "bind", "listen", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"} {
			a.jumpIf(bpf.JumpEqual, nr(name), "net", "")
		}
	}
	a.ret(RetAllow)

	if r.BlockTerminalInjection {
		a.label("ioctl")
		// The tty layer compares the request as an unsigned int: only the
		// low 32 bits of args[1] matter.
		a.load(offArgLow(1))
		a.jumpIf(bpf.JumpEqual, tiocsti, "eperm", "")
		a.jumpIf(bpf.JumpEqual, tioclinux, "eperm", "")
		a.ret(RetAllow)
	}
	if r.Network != NetworkUnfiltered {
		a.label("socket")
		// domain and type are C ints: the kernel uses the low 32 bits.
		a.load(offArgLow(0))
		a.jumpIf(bpf.JumpNotEqual, afUnix, "net", "")
		a.load(offArgLow(1))
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask})
		a.jumpIf(bpf.JumpEqual, sockStream, "allow", "")
		a.jumpIf(bpf.JumpEqual, sockSeqpacket, "allow", "")
		if sendNotify {
			// Only socketpair comes here (socket() notifies whole, with
			// UnixSocketsNotify): a Unix datagram pair too, since every
			// send that can name another socket notifies.
			a.jumpIf(bpf.JumpEqual, sockDgram, "allow", "")
			a.jumpIf(bpf.JumpEqual, sockRaw, "allow", "")
		}
		a.ret(netRet)

		if r.UnixSocketsNotify && r.Network == NetworkNotify {
			// socket(): every family notifies, Unix stream and
			// seqpacket too, so that children get theirs from the
			// private namespace; socketpair stays as above.
			a.label("unixsocket")
			a.ret(netRet)
		}

		if r.PassCredNotify && r.Network == NetworkNotify {
			// level and optname are C ints: the low 32 bits.
			a.label("passcred")
			a.load(offArgLow(1))
			a.jumpIf(bpf.JumpNotEqual, solSocket, "allow", "")
			a.load(offArgLow(2))
			a.jumpIf(bpf.JumpEqual, soPassCred, "net", "")
			a.jumpIf(bpf.JumpEqual, soPassPidfd, "net", "")
			a.ret(RetAllow)
		}

		a.label("sendto")
		// dest_addr is a pointer: both halves must be zero.
		a.load(offArgLow(4))
		a.jumpIf(bpf.JumpNotEqual, 0, "net", "")
		a.load(offArgHigh(4))
		a.jumpIf(bpf.JumpNotEqual, 0, "net", "")
		a.ret(RetAllow)

		a.label("net")
		a.ret(netRet)
	}
	if r.BlockUserNamespaces {
		a.label("newuser")
		// clone's and unshare's flags are the first argument on both
		// architectures; CLONE_NEWUSER sits in the low 32 bits.
		a.load(offArgLow(0))
		a.jumpIf(bpf.JumpBitsSet, cloneNewUser, "eperm", "")
		a.ret(RetAllow)
	}
	if r.BlockSetID {
		// mode_t is 32 bits: only the low half of the argument counts.
		for _, i := range []int{1, 2, 3} {
			a.label(fmt.Sprintf("mode%d", i))
			a.load(offArgLow(i))
			a.jumpIf(bpf.JumpBitsSet, modeSetID, "eperm", "")
			a.ret(RetAllow)
		}
	}
	if r.BlockUserNamespaces || r.BlockSetID {
		a.label("enosys")
		a.ret(RetErrno | errnoENOSYS)
	}
	if r.Observe.Paths {
		if r.Observe.Writes {
			for _, i := range []int{1, 2} {
				// Flags are a C int: the low half counts.
				a.label(fmt.Sprintf("observe_flags%d", i))
				a.load(offArgLow(i))
				a.jumpIf(bpf.JumpBitsSet, observerWriteFlags, "observe", "")
				a.ret(RetAllow)
			}
		}
		a.label("observe")
		a.ret(RetUserNotif)
	}
	if r.OwnIDs != nil {
		// uid_t and gid_t are 32 bits: the kernel reads the low half.
		for _, c := range idArgs {
			if _, ok := t.nr[c.name]; !ok {
				continue
			}
			a.label("id_" + c.name)
			for k, id := range c.args {
				own := r.OwnIDs.UID
				if id.gid {
					own = r.OwnIDs.GID
				}
				next := fmt.Sprintf("id_%s_%d", c.name, k)
				a.load(offArgLow(id.arg))
				a.jumpIf(bpf.JumpEqual, own, next, "")
				a.jumpIf(bpf.JumpNotEqual, 0xffffffff, "eperm", "")
				a.label(next)
			}
			a.ret(RetAllow)
		}
	}
	if r.GuardOthers {
		// pid_t, int and the signal number are C ints: the low half.
		a.label("g_prlimit")
		a.load(offArgLow(0))
		a.jumpIf(bpf.JumpEqual, 0, "allow", "")
		// Another process: reading its limits (new_limit NULL) is fine.
		a.load(offArgLow(2))
		a.jumpIf(bpf.JumpNotEqual, 0, "eperm", "")
		a.load(offArgHigh(2))
		a.jumpIf(bpf.JumpNotEqual, 0, "eperm", "")
		a.ret(RetAllow)

		a.label("g_pid0")
		a.load(offArgLow(0))
		a.jumpIf(bpf.JumpNotEqual, 0, "eperm", "")
		a.ret(RetAllow)

		a.label("g_prio") // which == PRIO_PROCESS (0), who == 0
		a.load(offArgLow(0))
		a.jumpIf(bpf.JumpNotEqual, 0, "eperm", "")
		if !r.PriorityToCommand {
			a.load(offArgLow(1))
			a.jumpIf(bpf.JumpNotEqual, 0, "eperm", "")
		}
		a.ret(RetAllow)

		a.label("g_ioprio") // which == IOPRIO_WHO_PROCESS (1), who == 0
		a.load(offArgLow(0))
		a.jumpIf(bpf.JumpNotEqual, ioprioWhoProcess, "eperm", "")
		a.load(offArgLow(1))
		a.jumpIf(bpf.JumpNotEqual, 0, "eperm", "")
		a.ret(RetAllow)

		// fcntl(F_SETSIG, a fault signal): the kernel would send it, with
		// si_code SI_SIGIO, to whoever F_SETOWN names (pid 1 too).
		a.label("g_fcntl")
		a.load(offArgLow(1))
		a.jumpIf(bpf.JumpNotEqual, fSetsig, "allow", "")
		a.load(offArgLow(2))
		for _, sig := range faultSignals {
			a.jumpIf(bpf.JumpEqual, sig, "eperm", "")
		}
		a.ret(RetAllow)

		a.label("g_pidfd") // a fault signal with a siginfo
		a.load(offArgLow(2))
		a.jumpIf(bpf.JumpNotEqual, 0, "g_sig1", "")
		a.load(offArgHigh(2))
		a.jumpIf(bpf.JumpNotEqual, 0, "g_sig1", "")
		a.ret(RetAllow)

		for i, l := range []string{"g_sig1", "g_sig2"} {
			a.label(l)
			a.load(offArgLow(i + 1))
			for _, sig := range faultSignals {
				a.jumpIf(bpf.JumpEqual, sig, "eperm", "")
			}
			a.ret(RetAllow)
		}
	}
	if r.PriorityNotify {
		// which and who are C ints: the low half. Another which than
		// PRIO_PROCESS with a who names a group or a user (pid 1's).
		a.label("prio_notify")
		a.load(offArgLow(1))
		a.jumpIf(bpf.JumpEqual, 0, "allow", "")
		a.load(offArgLow(0))
		a.jumpIf(bpf.JumpNotEqual, 0, "eperm", "")
		a.ret(RetUserNotif)
	}
	a.label("allow")
	a.ret(RetAllow)
	a.label("eperm")
	a.ret(RetErrno | errnoEPERM)

	prog, err := a.assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %s: %w", arch, err)
	}
	return prog, nil
}

// ObserverPathSyscalls are the syscalls that change a name in a
// directory: the file observer's filter sends each to the supervisor, which
// logs those that name a denied or protected path and lets every one go on
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the kernel refuses them as before.
var ObserverPathSyscalls = []string{
	"rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir",
	"link", "linkat", "symlink", "symlinkat", "mkdir", "mkdirat", "mknod", "mknodat", "truncate",
}

// Observe selects the file observer's rules (see ObserverPathSyscalls).
type Observe struct {
	// Paths sends every syscall of ObserverPathSyscalls to the
	// supervisor.
	Paths bool
	// Writes sends every open, openat and creat that may write (O_WRONLY,
	// O_RDWR, O_CREAT or O_TRUNC) too. openat2's flags are behind a
	// pointer: the base filter refuses openat2 (BlockSetID) in every
	// enforcing profile.
	Writes bool
}

// ioprioWhoProcess is IOPRIO_WHO_PROCESS; fSetsig is F_SETSIG.
const (
	ioprioWhoProcess = 1
	fSetsig          = 10
)

// faultSignals are the signals the Go runtime takes for a fault of its own
// when their siginfo does not say that a process sent them: SIGILL,
// SIGTRAP, SIGBUS, SIGFPE, SIGSEGV, SIGSYS.
var faultSignals = []uint32{4, 5, 7, 8, 11, 31}

// observerWriteFlags are O_WRONLY|O_RDWR|O_CREAT|O_TRUNC.
const observerWriteFlags = 0o1 | 0o2 | 0o100 | 0o1000

// asm is a tiny assembler with forward labels for conditional jumps.
type asm struct {
	items  []asmItem
	labels map[string]int // label -> index of the next instruction
}

type asmItem struct {
	ins    bpf.Instruction // nil for a conditional jump
	cond   bpf.JumpTest
	val    uint32
	jt, jf string // "" means the next instruction
	isJump bool
}

func (a *asm) emit(ins bpf.Instruction) { a.items = append(a.items, asmItem{ins: ins}) }

func (a *asm) load(off uint32) { a.emit(bpf.LoadAbsolute{Off: off, Size: 4}) }

func (a *asm) ret(v uint32) { a.emit(bpf.RetConstant{Val: v}) }

func (a *asm) jumpIf(cond bpf.JumpTest, val uint32, jt, jf string) {
	a.items = append(a.items, asmItem{cond: cond, val: val, jt: jt, jf: jf, isJump: true})
}

func (a *asm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	if _, dup := a.labels[name]; dup {
		panic("seccomp: duplicate label " + name)
	}
	a.labels[name] = len(a.items)
}

func (a *asm) assemble() ([]bpf.RawInstruction, error) {
	skip := func(from int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := a.labels[label]
		if !ok {
			return 0, fmt.Errorf("undefined label %q", label)
		}
		d := to - (from + 1)
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("jump to %q out of range (%d)", label, d)
		}
		return uint8(d), nil
	}
	out := make([]bpf.Instruction, len(a.items))
	for i, it := range a.items {
		if !it.isJump {
			out[i] = it.ins
			continue
		}
		st, err := skip(i, it.jt)
		if err != nil {
			return nil, err
		}
		sf, err := skip(i, it.jf)
		if err != nil {
			return nil, err
		}
		out[i] = bpf.JumpIf{Cond: it.cond, Val: it.val, SkipTrue: st, SkipFalse: sf}
	}
	return bpf.Assemble(out)
}

// ChildFamily reports whether the command's children get sockets of
// domain and protocol from their private network namespace (README: help
// network): IP, netlink route, and Unix of the types UnixStreamType
// allows. The supervisor gives these, and the refusals name the rest.
func ChildFamily(domain, proto int) bool {
	const afInet, afInet6, afNetlink, netlinkRoute = 2, 10, 16, 0
	switch domain {
	case afInet, afInet6:
		return true
	case afNetlink:
		return proto == netlinkRoute
	case afUnix:
		return proto == 0
	}
	return false
}

// UnixStreamType reports whether a socket type (with its flags) is one
// the children may have as a Unix socket: stream or seqpacket (a datagram's
// destination is out of a filter's sight).
func UnixStreamType(typ int) bool {
	t := typ & sockTypeMask
	return t == sockStream || t == sockSeqpacket
}

// UnixDatagramType reports whether a socket type (with its flags) makes
// a Unix datagram socket, which children may have where their sends are
// made for them (Rules.SendNotify): SOCK_DGRAM, and SOCK_RAW, which the
// kernel turns into SOCK_DGRAM.
func UnixDatagramType(typ int) bool {
	t := typ & sockTypeMask
	return t == sockDgram || t == sockRaw
}

// Encode lays out a program as the kernel's struct sock_filter array (on
// the little-endian architectures Build knows).
func Encode(prog []bpf.RawInstruction) []byte {
	out := make([]byte, 0, 8*len(prog))
	for _, ins := range prog {
		out = binary.LittleEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.LittleEndian.AppendUint32(out, ins.K)
	}
	return out
}

// Decode is Encode's inverse.
func Decode(b []byte) ([]bpf.RawInstruction, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("a seccomp program of %d bytes is not a whole number of instructions", len(b))
	}
	prog := make([]bpf.RawInstruction, len(b)/8)
	for i := range prog {
		ins := b[8*i : 8*i+8]
		prog[i] = bpf.RawInstruction{Op: binary.LittleEndian.Uint16(ins), Jt: ins[2], Jf: ins[3], K: binary.LittleEndian.Uint32(ins[4:])}
	}
	return prog, nil
}
