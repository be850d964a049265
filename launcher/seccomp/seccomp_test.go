package seccomp

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"golang.org/x/net/bpf"
)

const auditArchI386 = 0x40000003

// seccompData builds the input of the filter. The kernel runs seccomp
// programs with native 32-bit word loads; x/net/bpf's VM loads words
// big-endian. So each 32-bit word is stored big-endian at the offset where
// a little-endian kernel finds it: for a 64-bit argument, the low half at
// the argument's offset and the high half 4 bytes later.
func seccompData(arch uint32, nr int32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], arch)
	binary.BigEndian.PutUint32(b[8:], 0x00401000) // instruction pointer, low half
	for i, a := range args {
		binary.BigEndian.PutUint32(b[offArgLow(i):], uint32(a))
		binary.BigEndian.PutUint32(b[offArgHigh(i):], uint32(a>>32))
	}
	return b
}

func run(t *testing.T, prog []bpf.RawInstruction, data []byte) uint32 {
	t.Helper()
	ins, ok := bpf.Disassemble(prog)
	if !ok {
		t.Fatalf("program does not disassemble completely")
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	v, err := vm.Run(data)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return uint32(v)
}

func retName(v uint32) string {
	switch {
	case v == RetAllow:
		return "ALLOW"
	case v == RetUserNotif:
		return "USER_NOTIF"
	case v == RetKillProcess:
		return "KILL_PROCESS"
	case v&RetActionFull == RetErrno:
		return fmt.Sprintf("ERRNO(%d)", v&RetData)
	}
	return fmt.Sprintf("%#x", v)
}

var archs = []Arch{ArchAMD64, ArchARM64}

func mustNr(t *testing.T, arch Arch, name string) int32 {
	t.Helper()
	nr, ok := tables[arch].nr[name]
	if !ok {
		t.Fatalf("no number for %s on %s", name, arch)
	}
	return nr
}

const (
	afInet    = 2
	afInet6   = 10
	afNetlink = 16
	afPacket  = 17
	afTipc    = 30

	sockNonblock = 0x800
	sockCloexec  = 0x80000

	tcgets     = 0x5401
	tiocgwinsz = 0x5413
	tiocswinsz = 0x5414
)

var (
	eperm  = RetErrno | errnoEPERM
	eacces = RetErrno | errnoEACCES
)

type call struct {
	name string
	args []uint64
	// expected result per mode; terminal injection is on in all cases.
	none, notify, deny uint32
}

func calls() []call {
	allow := func(name string, args ...uint64) call {
		return call{name, args, RetAllow, RetAllow, RetAllow}
	}
	netc := func(name string, args ...uint64) call {
		return call{name, args, RetAllow, RetUserNotif, eacces}
	}
	permAll := func(name string, args ...uint64) call {
		return call{name, args, eperm, eperm, eperm}
	}
	uring := func(name string, args ...uint64) call {
		return call{name, args, RetAllow, eperm, eperm}
	}
	return []call{
		// terminal injection
		permAll("ioctl", 0, tiocsti),
		permAll("ioctl", 0, tiocsti|1<<32),
		permAll("ioctl", 3, 0xffffffff00000000|tiocsti),
		permAll("ioctl", 0, tioclinux),
		allow("ioctl", 0, tcgets),
		allow("ioctl", 0, tiocswinsz),
		allow("ioctl", 0, tiocgwinsz),
		allow("ioctl", tiocsti, tcgets), // TIOCSTI in the wrong argument
		// sockets
		netc("socket", afInet, 1, 0),
		netc("socket", afInet6, 2, 0),
		netc("socket", afNetlink, sockRaw, 0),
		netc("socket", afPacket, sockRaw, 0),
		allow("socket", afUnix|1<<32, sockStream, 0), // domain is an int: the kernel ignores the high half
		allow("socket", afUnix, sockStream|sockCloexec, 0),
		allow("socket", afUnix, sockSeqpacket|sockNonblock|sockCloexec, 0),
		netc("socket", afUnix, sockDgram|sockNonblock, 0),
		netc("socket", afUnix, sockDgram, 0),
		netc("socket", afUnix, sockRaw, 0), // AF_UNIX SOCK_RAW becomes SOCK_DGRAM
		allow("socketpair", afUnix, sockStream, 0, 0x1000),
		allow("socketpair", afUnix, sockSeqpacket|sockCloexec, 0, 0x1000),
		netc("socketpair", afUnix, sockDgram|sockCloexec, 0, 0x1000),
		netc("socketpair", afTipc, sockStream, 0, 0x1000),
		netc("connect", 3, 0x7ffd0000, 16),
		netc("connect", 3, 0, 0),
		allow("sendto", 3, 0x1000, 10, 0, 0, 0),
		netc("sendto", 3, 0x1000, 10, 0, 0x7ffd00000000, 16),
		netc("sendto", 3, 0x1000, 10, 0, 0x00000000ffff0000, 16),
		netc("sendto", 3, 0x1000, 10, 0, 0x7ffdffff0000, 0),
		allow("sendmsg", 3, 0x1000, 0),
		allow("sendmmsg", 3, 0x1000, 2, 0),
		netc("ptrace", 16, 1, 0, 0),
		netc("process_vm_readv", 1, 0x1000, 1, 0x2000, 1, 0),
		netc("process_vm_writev", 1, 0x1000, 1, 0x2000, 1, 0),
		netc("pidfd_getfd", 3, 4, 0),
		// the supervisor reads the caller's memory: no page may make it wait
		{"userfaultfd", []uint64{0}, RetAllow, eperm, RetAllow},
		uring("io_uring_setup", 8, 0x1000),
		uring("io_uring_enter", 3, 1, 1, 0, 0, 0),
		uring("io_uring_register", 3, 0, 0x1000, 1),
		// unrelated
		allow("read", 0, 0x1000, 10),
		allow("write", 1, 0x1000, 10),
		allow("openat", 0xffffff9c, 0x1000, 0, 0),
	}
}

func TestBuildVM(t *testing.T) {
	for _, arch := range archs {
		auditArch := tables[arch].auditArch
		for _, mode := range []Network{NetworkUnfiltered, NetworkNotify, NetworkDeny} {
			prog, err := Build(Rules{BlockTerminalInjection: true, Network: mode}, arch)
			if err != nil {
				t.Fatalf("Build(%s, %s): %v", arch, mode, err)
			}
			for _, c := range calls() {
				want := map[Network]uint32{NetworkUnfiltered: c.none, NetworkNotify: c.notify, NetworkDeny: c.deny}[mode]
				got := run(t, prog, seccompData(auditArch, mustNr(t, arch, c.name), c.args...))
				if got != want {
					t.Errorf("%s/%s: %s(%#x) = %s, want %s", arch, mode, c.name, c.args, retName(got), retName(want))
				}
			}
		}
	}
}

// UnixSocketsNotify sends every socket() to the supervisor under
// NetworkNotify, Unix ones too, and leaves socketpair and the other modes
// as they are.
func TestUnixSocketsNotify(t *testing.T) {
	const afUnix, afInet, stream, dgram = 1, 2, 1, 2
	for _, arch := range archs {
		aa := tables[arch].auditArch
		for _, c := range []struct {
			mode        Network
			name        string
			domain, typ uint64
			want        uint32
		}{
			{NetworkNotify, "socket", afUnix, stream, RetUserNotif},
			{NetworkNotify, "socket", afUnix, 5 /* SOCK_SEQPACKET */ | 0x80000 /* SOCK_CLOEXEC */, RetUserNotif},
			{NetworkNotify, "socket", afInet, stream, RetUserNotif},
			{NetworkNotify, "socketpair", afUnix, stream, RetAllow},
			{NetworkNotify, "socketpair", afUnix, dgram, RetUserNotif},
			{NetworkDeny, "socket", afUnix, stream, RetAllow},
			{NetworkUnfiltered, "socket", afUnix, stream, RetAllow},
		} {
			prog, err := Build(Rules{Network: c.mode, UnixSocketsNotify: true}, arch)
			if err != nil {
				t.Fatal(err)
			}
			got := run(t, prog, seccompData(aa, mustNr(t, arch, c.name), c.domain, c.typ, 0))
			if got != c.want {
				t.Errorf("%s/%s: %s(%d, %#x) = %s, want %s", arch, c.mode, c.name, c.domain, c.typ, retName(got), retName(c.want))
			}
		}
	}
}

// SendNotify sends sendmsg and sendmmsg to the supervisor under
// NetworkNotify, lets socketpair make Unix datagram pairs, and changes
// nothing else: sendto without an address and write stay the kernel's.
func TestSendNotify(t *testing.T) {
	const afUnix, stream, dgram, raw = 1, 1, 2, 3
	for _, arch := range archs {
		aa := tables[arch].auditArch
		for _, c := range []struct {
			mode Network
			on   bool
			name string
			args []uint64
			want uint32
		}{
			{NetworkNotify, true, "sendmsg", []uint64{3, 0x1000, 0}, RetUserNotif},
			{NetworkNotify, true, "sendmmsg", []uint64{3, 0x1000, 2, 0}, RetUserNotif},
			{NetworkNotify, true, "sendto", []uint64{3, 0x1000, 10, 0, 0, 0}, RetAllow},
			{NetworkNotify, true, "sendto", []uint64{3, 0x1000, 10, 0, 0x2000, 16}, RetUserNotif},
			{NetworkNotify, true, "write", []uint64{3, 0x1000, 10}, RetAllow},
			{NetworkNotify, true, "socketpair", []uint64{afUnix, dgram | 0x80000, 0}, RetAllow},
			{NetworkNotify, true, "socketpair", []uint64{afUnix, stream, 0}, RetAllow},
			{NetworkNotify, true, "socketpair", []uint64{afUnix, raw, 0}, RetAllow},
			{NetworkNotify, true, "socketpair", []uint64{afUnix, 4 /* SOCK_RDM */, 0}, RetUserNotif},
			{NetworkNotify, true, "socketpair", []uint64{afInet, dgram, 0}, RetUserNotif},
			{NetworkNotify, true, "socket", []uint64{afUnix, dgram, 0}, RetUserNotif},
			{NetworkNotify, false, "sendmsg", []uint64{3, 0x1000, 0}, RetAllow},
			{NetworkNotify, false, "socketpair", []uint64{afUnix, dgram, 0}, RetUserNotif},
			{NetworkDeny, true, "sendmsg", []uint64{3, 0x1000, 0}, RetAllow},
			{NetworkDeny, true, "socketpair", []uint64{afUnix, dgram, 0}, RetErrno | errnoEACCES},
		} {
			prog, err := Build(Rules{Network: c.mode, UnixSocketsNotify: true, SendNotify: c.on}, arch)
			if err != nil {
				t.Fatal(err)
			}
			got := run(t, prog, seccompData(aa, mustNr(t, arch, c.name), c.args...))
			if got != c.want {
				t.Errorf("%s/%s on=%v: %s(%#x) = %s, want %s", arch, c.mode, c.on, c.name, c.args, retName(got), retName(c.want))
			}
		}
	}
	if _, err := Build(Rules{Network: NetworkNotify, SendNotify: true}, ArchAMD64); err == nil {
		t.Error("SendNotify without UnixSocketsNotify was built")
	}
}

// PassCredNotify sends setsockopt(SOL_SOCKET, SO_PASSCRED or SO_PASSPIDFD)
// to the supervisor, under NetworkNotify only; every other option stays
// the kernel's.
func TestPassCredNotify(t *testing.T) {
	for _, arch := range archs {
		aa := tables[arch].auditArch
		for _, c := range []struct {
			mode           Network
			on             bool
			level, optname uint64
			want           uint32
		}{
			{NetworkNotify, true, solSocket, soPassCred, RetUserNotif},
			{NetworkNotify, true, solSocket, soPassPidfd, RetUserNotif},
			{NetworkNotify, true, solSocket | 1<<32, soPassCred | 1<<32, RetUserNotif}, // the low 32 bits count
			{NetworkNotify, true, solSocket, 2 /* SO_REUSEADDR */, RetAllow},
			{NetworkNotify, true, 6 /* IPPROTO_TCP */, soPassCred, RetAllow},
			{NetworkNotify, false, solSocket, soPassCred, RetAllow},
			{NetworkDeny, true, solSocket, soPassCred, RetAllow},
		} {
			prog, err := Build(Rules{Network: c.mode, UnixSocketsNotify: true, PassCredNotify: c.on}, arch)
			if err != nil {
				t.Fatal(err)
			}
			got := run(t, prog, seccompData(aa, mustNr(t, arch, "setsockopt"), 3, c.level, c.optname))
			if got != c.want {
				t.Errorf("%s/%s on=%v: setsockopt(3, %#x, %#x) = %s, want %s", arch, c.mode, c.on, c.level, c.optname, retName(got), retName(c.want))
			}
		}
	}
}

func TestNoTerminalInjectionRule(t *testing.T) {
	for _, arch := range archs {
		prog, err := Build(Rules{Network: NetworkNotify}, arch)
		if err != nil {
			t.Fatal(err)
		}
		got := run(t, prog, seccompData(tables[arch].auditArch, mustNr(t, arch, "ioctl"), 0, tiocsti))
		if got != RetAllow {
			t.Errorf("%s: TIOCSTI without BlockTerminalInjection = %s, want ALLOW", arch, retName(got))
		}
	}
}

func TestWrongArch(t *testing.T) {
	for _, arch := range archs {
		other := map[Arch]uint32{ArchAMD64: auditArchAArch64, ArchARM64: auditArchX86_64}[arch]
		for _, mode := range []Network{NetworkUnfiltered, NetworkNotify, NetworkDeny} {
			for _, bti := range []bool{false, true} {
				prog, err := Build(Rules{BlockTerminalInjection: bti, Network: mode}, arch)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range []uint32{auditArchI386, other, 0} {
					for _, nr := range []int32{0, 1, 3, 4, 5, 16, 29, 41, 54, 63, 102, 198, 359, 425, 0x40000000} {
						if got := run(t, prog, seccompData(a, nr, 2, 1, 0)); got != eperm {
							t.Errorf("%s/%s/bti=%v: arch %#x nr %d = %s, want ERRNO(EPERM)", arch, mode, bti, a, nr, retName(got))
						}
					}
				}
			}
		}
	}
}

func TestX32(t *testing.T) {
	for _, mode := range []Network{NetworkUnfiltered, NetworkNotify, NetworkDeny} {
		prog, err := Build(Rules{BlockTerminalInjection: true, Network: mode}, ArchAMD64)
		if err != nil {
			t.Fatal(err)
		}
		for _, nr := range []int32{0, 1, 41, 42, 257, 512, 519} { // read, write, socket, connect, openat, x32 rt_sigaction, x32 recvmsg
			if got := run(t, prog, seccompData(auditArchX86_64, 0x40000000|nr, 2, 1, 0)); got != eperm {
				t.Errorf("%s: x32 nr %#x = %s, want ERRNO(EPERM)", mode, 0x40000000|nr, retName(got))
			}
		}
	}
	// On arm64 the bit has no meaning; such numbers are simply unknown
	// syscalls (ENOSYS in the kernel), the filter allows them.
	prog, _ := Build(Rules{Network: NetworkDeny}, ArchARM64)
	if got := run(t, prog, seccompData(auditArchAArch64, 0x40000000|63)); got != RetAllow {
		t.Errorf("arm64: nr 0x4000003f = %s, want ALLOW", retName(got))
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build(Rules{}, "riscv64"); err == nil {
		t.Error("Build for riscv64: no error")
	}
	if _, err := Build(Rules{}, ""); err == nil {
		t.Error("Build for empty arch: no error")
	}
	if _, err := Build(Rules{Network: 7}, ArchAMD64); err == nil {
		t.Error("Build with Network(7): no error")
	}
}

// TestKernelConstraints checks what the kernel's seccomp checker
// (seccomp_check_filter) requires: 32-bit aligned absolute loads inside
// struct seccomp_data, only ALU/JMP/RET otherwise, forward jumps inside the
// program, a final return, and at most BPF_MAXINSNS instructions.
func TestKernelConstraints(t *testing.T) {
	for _, arch := range archs {
		for _, r := range []Rules{{}, {BlockTerminalInjection: true}, {BlockTerminalInjection: true, Network: NetworkNotify}, {BlockTerminalInjection: true, Network: NetworkDeny}, {Network: NetworkDeny}, {BlockTerminalInjection: true, Network: NetworkNotify, BlockUserNamespaces: true}} {
			prog, err := Build(r, arch)
			if err != nil {
				t.Fatal(err)
			}
			if len(prog) > 4096 {
				t.Fatalf("%d instructions", len(prog))
			}
			ins, ok := bpf.Disassemble(prog)
			if !ok {
				t.Fatalf("%s %+v: does not disassemble", arch, r)
			}
			for i, in := range ins {
				switch in := in.(type) {
				case bpf.LoadAbsolute:
					if in.Size != 4 || in.Off%4 != 0 || in.Off+4 > 64 {
						t.Errorf("%s %+v: #%d bad load %v", arch, r, i, in)
					}
				case bpf.JumpIf:
					if i+1+int(in.SkipTrue) >= len(ins) || i+1+int(in.SkipFalse) >= len(ins) {
						t.Errorf("%s %+v: #%d jump out of range", arch, r, i)
					}
				case bpf.Jump:
					if i+1+int(in.Skip) >= len(ins) {
						t.Errorf("%s %+v: #%d jump out of range", arch, r, i)
					}
				case bpf.ALUOpConstant, bpf.RetConstant:
				default:
					t.Errorf("%s %+v: #%d unexpected instruction %T %v", arch, r, i, in, in)
				}
			}
			if _, ok := ins[len(ins)-1].(bpf.RetConstant); !ok {
				t.Errorf("%s %+v: does not end with a return", arch, r)
			}
		}
	}
}

func TestSyscallName(t *testing.T) {
	for _, tc := range []struct {
		arch Arch
		nr   int32
		want string
	}{
		{ArchAMD64, 41, "socket"},
		{ArchAMD64, 42, "connect"},
		{ArchAMD64, 438, "pidfd_getfd"},
		{ArchARM64, 198, "socket"},
		{ArchARM64, 203, "connect"},
		{ArchARM64, 117, "ptrace"},
		{ArchARM64, 41, "syscall_41"},
		{"riscv64", 198, "syscall_198"},
	} {
		if got := SyscallName(tc.arch, tc.nr); got != tc.want {
			t.Errorf("SyscallName(%s, %d) = %q, want %q", tc.arch, tc.nr, got, tc.want)
		}
	}
}

// BlockUserNamespaces: clone and unshare with CLONE_NEWUSER fail, clone3
// fails with ENOSYS (libc falls back to clone), other clones pass.
func TestBlockUserNamespaces(t *testing.T) {
	const newUser, newNS, thread = 0x10000000, 0x00020000, 0x00010000 | 0x00000100
	for _, arch := range archs {
		aa := tables[arch].auditArch
		on, err := Build(Rules{BlockUserNamespaces: true, BlockTerminalInjection: true, Network: NetworkNotify}, arch)
		if err != nil {
			t.Fatal(err)
		}
		off, err := Build(Rules{BlockTerminalInjection: true}, arch)
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name   string
			args   []uint64
			on     uint32
			offRet uint32
		}{
			{"clone", []uint64{thread}, RetAllow, RetAllow},
			{"clone", []uint64{newUser | newNS}, eperm, RetAllow},
			{"clone", []uint64{1<<32 | newUser}, eperm, RetAllow},
			{"unshare", []uint64{newUser}, eperm, RetAllow},
			{"unshare", []uint64{newNS}, RetAllow, RetAllow},
			{"clone3", []uint64{0, 88}, RetErrno | errnoENOSYS, RetAllow},
			{"ioctl", []uint64{0, tiocsti}, eperm, eperm},
			{"socket", []uint64{2, 1, 0}, RetUserNotif, RetAllow},
		}
		for _, c := range cases {
			data := seccompData(aa, mustNr(t, arch, c.name), c.args...)
			if got := run(t, on, data); got != c.on {
				t.Errorf("%s: %s(%#x) with the block = %s, want %s", arch, c.name, c.args, retName(got), retName(c.on))
			}
			if got := run(t, off, data); got != c.offRet {
				t.Errorf("%s: %s(%#x) without = %s, want %s", arch, c.name, c.args, retName(got), retName(c.offRet))
			}
		}
	}
}

// BlockSetID: a mode with S_ISUID or S_ISGID fails for every mode change and
// file creation, whatever the high half of the argument; other modes pass;
// openat2 fails with ENOSYS.
func TestBlockSetID(t *testing.T) {
	for _, arch := range archs {
		aa := tables[arch].auditArch
		on, err := Build(Rules{BlockSetID: true}, arch)
		if err != nil {
			t.Fatal(err)
		}
		for name, arg := range modeArg {
			if _, ok := tables[arch].nr[name]; !ok {
				continue // arm64 has only the *at forms
			}
			for _, c := range []struct {
				mode uint64
				want uint32
			}{
				{0o755, RetAllow}, {0o4755, eperm}, {0o2755, eperm}, {0o6755, eperm}, {1<<32 | 0o644, RetAllow}, {1<<32 | 0o4000, eperm},
			} {
				args := make([]uint64, arg+1)
				args[arg] = c.mode
				if got := run(t, on, seccompData(aa, mustNr(t, arch, name), args...)); got != c.want {
					t.Errorf("%s: %s(mode %#o) = %s, want %s", arch, name, c.mode, retName(got), retName(c.want))
				}
			}
		}
		if got := run(t, on, seccompData(aa, mustNr(t, arch, "openat2"))); got != RetErrno|errnoENOSYS {
			t.Errorf("%s: openat2 = %s, want ENOSYS", arch, retName(got))
		}
		off, _ := Build(Rules{}, arch)
		if got := run(t, off, seccompData(aa, mustNr(t, arch, "fchmodat"), 0, 0, 0o4755)); got != RetAllow {
			t.Errorf("%s: fchmodat without the rule = %s", arch, retName(got))
		}
	}
}

// OwnIDs: an id change or chown naming another uid or gid fails with EPERM
// (whatever the high half of the argument), one naming the caller's own or
// -1 passes; without the rule every one passes.
func TestOwnIDs(t *testing.T) {
	const uid, gid, other, keep = 1000, 100, 0, 0xffffffff
	for _, arch := range archs {
		aa := tables[arch].auditArch
		on, err := Build(Rules{OwnIDs: &IDs{UID: uid, GID: gid}, BlockTerminalInjection: true}, arch)
		if err != nil {
			t.Fatal(err)
		}
		off, err := Build(Rules{BlockTerminalInjection: true}, arch)
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			args []uint64
			want uint32
		}{
			{"setuid", []uint64{uid}, RetAllow},
			{"setuid", []uint64{other}, eperm},
			{"setuid", []uint64{65533}, eperm},
			{"setuid", []uint64{1<<32 | uid}, RetAllow},
			{"setuid", []uint64{gid}, eperm}, // a uid is not checked against the gid
			{"setgid", []uint64{gid}, RetAllow},
			{"setgid", []uint64{uid}, eperm},
			{"setreuid", []uint64{keep, uid}, RetAllow},
			{"setreuid", []uint64{uid, other}, eperm},
			{"setreuid", []uint64{other, keep}, eperm},
			{"setregid", []uint64{gid, gid}, RetAllow},
			{"setregid", []uint64{gid, 50}, eperm},
			{"setresuid", []uint64{uid, uid, uid}, RetAllow},
			{"setresuid", []uint64{uid, uid, other}, eperm},
			{"setresuid", []uint64{0xffffffffffffffff, keep, keep}, RetAllow},
			{"setresgid", []uint64{keep, other, keep}, eperm},
			{"fchown", []uint64{3, uid, gid}, RetAllow},
			{"fchown", []uint64{3, keep, gid}, RetAllow},
			{"fchown", []uint64{3, uid, keep}, RetAllow},
			{"fchown", []uint64{3, other, gid}, eperm},
			{"fchown", []uint64{3, uid, other}, eperm},
			{"fchown", []uint64{3, keep, 65534}, eperm},
			{"fchownat", []uint64{3, 0, uid, gid, 0}, RetAllow},
			{"fchownat", []uint64{3, 0, 65533, gid, 0}, eperm},
			{"fchownat", []uint64{3, 0, keep, other, 0}, eperm},
			{"ioctl", []uint64{0, tiocsti}, eperm},
			{"openat", []uint64{0, 0, 0}, RetAllow},
		}
		if _, ok := tables[arch].nr["chown"]; ok {
			cases = append(cases, struct {
				name string
				args []uint64
				want uint32
			}{"chown", []uint64{0, uid, other}, eperm}, struct {
				name string
				args []uint64
				want uint32
			}{"lchown", []uint64{0, keep, gid}, RetAllow})
		}
		for _, c := range cases {
			data := seccompData(aa, mustNr(t, arch, c.name), c.args...)
			if got := run(t, on, data); got != c.want {
				t.Errorf("%s: %s(%#x) = %s, want %s", arch, c.name, c.args, retName(got), retName(c.want))
			}
			if c.name == "ioctl" {
				continue
			}
			if got := run(t, off, data); got != RetAllow {
				t.Errorf("%s: %s(%#x) without the rule = %s", arch, c.name, c.args, retName(got))
			}
		}
	}
}

// setpriority with a pid: refused by GuardOthers alone; let through by the
// base filter with PriorityToCommand, for the command's filter
// (PriorityNotify) to send to the supervisor; another which with a pid is
// refused by both; the caller itself (who 0) passes everywhere.
func TestPriorityNotify(t *testing.T) {
	const prioProcess, prioPgrp, prioUser = 0, 1, 2
	for _, arch := range archs {
		aa := tables[arch].auditArch
		guard, err := Build(Rules{GuardOthers: true}, arch)
		if err != nil {
			t.Fatal(err)
		}
		base, err := Build(Rules{GuardOthers: true, PriorityToCommand: true}, arch)
		if err != nil {
			t.Fatal(err)
		}
		command, err := Build(Rules{PriorityNotify: true}, arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			which, who           uint64
			guard, base, command uint32
		}{
			{prioProcess, 0, RetAllow, RetAllow, RetAllow},
			{prioProcess, 1, eperm, RetAllow, RetUserNotif},
			{prioProcess, 4242, eperm, RetAllow, RetUserNotif},
			{prioProcess, 1 << 32, RetAllow, RetAllow, RetAllow}, // who 0 in the low half
			{prioPgrp, 0, eperm, eperm, RetAllow},
			{prioPgrp, 7, eperm, eperm, eperm},
			{prioUser, 0, eperm, eperm, RetAllow},
			{prioUser, 1000, eperm, eperm, eperm},
		} {
			data := seccompData(aa, mustNr(t, arch, "setpriority"), c.which, c.who, 10)
			for _, f := range []struct {
				name string
				prog []bpf.RawInstruction
				want uint32
			}{{"GuardOthers", guard, c.guard}, {"PriorityToCommand", base, c.base}, {"PriorityNotify", command, c.command}} {
				if got := run(t, f.prog, data); got != f.want {
					t.Errorf("%s: %s: setpriority(%d, %#x) = %s, want %s", arch, f.name, c.which, c.who, retName(got), retName(f.want))
				}
			}
		}
		if _, err := Build(Rules{PriorityNotify: true, GuardOthers: true}, arch); err == nil {
			t.Errorf("%s: PriorityNotify with GuardOthers built", arch)
		}
		if _, err := Build(Rules{PriorityToCommand: true}, arch); err == nil {
			t.Errorf("%s: PriorityToCommand without GuardOthers built", arch)
		}
	}
}

// bind and listen go to the supervisor with the other network calls: a
// child cannot serve on a host Unix or abstract socket.
func TestBindListenAreNetwork(t *testing.T) {
	for _, arch := range archs {
		aa := tables[arch].auditArch
		prog, err := Build(Rules{Network: NetworkNotify}, arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"bind", "listen"} {
			if got := run(t, prog, seccompData(aa, mustNr(t, arch, name))); got != RetUserNotif {
				t.Errorf("%s: %s = %s, want USER_NOTIF", arch, name, retName(got))
			}
		}
	}
}

// The starter gets the command's filter as the kernel's struct sock_filter
// bytes: Decode gives back the very program Encode was given.
func TestEncodeDecode(t *testing.T) {
	arch, err := HostArch()
	if err != nil {
		t.Skip(err)
	}
	prog, err := Build(Rules{Network: NetworkNotify, Observe: Observe{Paths: true, Writes: true}, UnixSocketsNotify: true, BlockUserNamespaces: true}, arch)
	if err != nil {
		t.Fatal(err)
	}
	b := Encode(prog)
	if len(b) != 8*len(prog) {
		t.Fatalf("%d bytes for %d instructions", len(b), len(prog))
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, prog) {
		t.Fatal("the decoded program differs")
	}
	if _, err := Decode(b[:len(b)-1]); err == nil {
		t.Fatal("a truncated program decoded")
	}
}
