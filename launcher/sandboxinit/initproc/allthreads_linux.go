package initproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrOneThreadOnly is DropCapabilitiesEverywhere's answer where it changed
// nothing: in a binary the Go runtime cannot change every thread of (one
// linked with cgo, such as a test binary), or while a thread that dropped
// its own capabilities has not ended. The caller then drops its own
// thread's capabilities and execs itself, which leaves one thread.
var ErrOneThreadOnly = errors.New("cannot change every thread at once")

// secureBits are NOROOT, NO_SETUID_FIXUP and KEEP_CAPS, each locked: root
// regains no capability on exec, and none comes back with a uid change.
const secureBits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5

// DropCapabilitiesEverywhere does what DropCapabilities does, on every
// thread of the process at once (syscall.AllThreadsSyscall), so that the
// init stage can go on in the same process after its privileged steps
// instead of execing itself again: securebits (while CAP_SETPCAP is still
// held), every capability of the bounding set, the permitted, effective
// and inheritable sets (and with them the ambient set), then
// no_new_privs where it is not set yet. Each call
// stops every thread, so only the bounding set's members are dropped (bwrap
// leaves a handful), not all 41. It returns ErrOneThreadOnly when the
// runtime cannot (cgo), before changing anything.
func DropCapabilitiesEverywhere() error {
	// A thread that has dropped its own capabilities (to start a helper,
	// then end locked) would fail each call below, and the runtime takes
	// one thread's failure for a corruption it cannot survive: wait for
	// such threads to end.
	// None can exist while no thread ever dropped its own (reading every
	// thread's status costs about 50 µs a thread here).
	if ownDrops.Load() > 0 {
		if err := awaitThreadsHolding(unix.CAP_SETPCAP, time.Second); err != nil {
			return err
		}
	}
	all := func(what string, trap uintptr, a1, a2, a3 uintptr) error {
		if _, _, e := syscall.AllThreadsSyscall(trap, a1, a2, a3); e != 0 {
			if e == syscall.ENOTSUP {
				return ErrOneThreadOnly
			}
			return fmt.Errorf("%s on every thread: %v", what, e)
		}
		return nil
	}
	if err := all("setting securebits", unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, secureBits, 0); err != nil {
		return err
	}
	last := capLastCap()
	for c := 0; c <= last; c++ {
		in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
		if err != nil || in == 0 {
			continue
		}
		if err := all(fmt.Sprintf("dropping capability %d from the bounding set", c), unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); err != nil {
			return err
		}
	}
	// The same header and (zero) data for every thread: the kernel reads
	// them and writes nothing back on success. No ambient capability
	// outlives it: the kernel keeps the ambient set within the permitted
	// and inheritable ones (VerifyAllThreads checks).
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := all("dropping capabilities", unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); err != nil {
		return err
	}
	// no_new_privs is every thread's already where bwrap set it before
	// its exec (it does): each thread descends from the one the exec
	// started, and the flag is never cleared. Each call here stops every
	// thread (0.15-0.4 ms here); VerifyAllThreads checks the flag on each
	// all the same.
	if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err == nil && nnp == 1 {
		return nil
	}
	return all("setting no_new_privs", unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0)
}

// awaitThreadsHolding returns once every thread of this process has
// capability c in its effective set, or ErrOneThreadOnly after limit.
func awaitThreadsHolding(c int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		missing := false
		err := eachThread([]string{"CapEff"}, func(tid string, status map[string]string) error {
			eff, err := strconv.ParseUint(status["CapEff"], 16, 64)
			if err != nil {
				return fmt.Errorf("thread %s: bad CapEff %q", tid, status["CapEff"])
			}
			if eff&(1<<c) == 0 {
				missing = true
			}
			return nil
		})
		if err != nil || !missing {
			return err
		}
		if time.Now().After(deadline) {
			return ErrOneThreadOnly
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// eachThread calls f with each thread's id and the fields named by keys of
// its /proc/self/task/TID/status; a thread that ends meanwhile is skipped.
// (One read into one buffer, and only those fields kept: this runs on
// every launch, and reading and splitting whole files into maps cost
// about 50 µs a thread here.)
func eachThread(keys []string, f func(tid string, status map[string]string) error) error {
	dir, err := unix.Open("/proc/self/task", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot list this process's threads: %v", err)
	}
	var tids []string
	names := make([]byte, 4096)
	for {
		n, err := unix.Getdents(dir, names)
		if err != nil {
			unix.Close(dir)
			return fmt.Errorf("cannot list this process's threads: %v", err)
		}
		if n <= 0 {
			break
		}
		_, _, tids = unix.ParseDirent(names[:n], -1, tids)
	}
	unix.Close(dir)
	if len(tids) == 0 {
		return errors.New("cannot list this process's threads: none")
	}
	buf := make([]byte, 8192)
	for _, tid := range tids {
		data, err := readStatus("/proc/self/task/"+tid+"/status", buf)
		if err == unix.ENOENT || err == unix.ESRCH {
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot read thread %s's status: %v", tid, err)
		}
		got := make(map[string]string, len(keys))
		for len(data) > 0 {
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			k, v, ok := bytes.Cut(line, []byte(":"))
			if !ok {
				continue
			}
			for _, want := range keys {
				if string(k) == want {
					got[want] = string(bytes.TrimSpace(v))
				}
			}
		}
		if err := f(tid, got); err != nil {
			return err
		}
	}
	return nil
}

// readStatus reads the whole of a /proc status file into buf.
func readStatus(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			return nil, errors.New("longer than expected")
		}
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
	}
}

// capLastCap is the highest capability number this kernel knows.
func capLastCap() int {
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return 40
}

// verifiedFields are the fields of a thread's status VerifyAllThreads reads.
var verifiedFields = []string{"NoNewPrivs", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}

// VerifyAllThreads reads every thread's capability sets and no_new_privs
// back from the kernel (/proc/self/task/*/status): none may hold a
// capability, in any set, or lack no_new_privs. It is the check that
// DropCapabilitiesEverywhere reached every thread.
func VerifyAllThreads() error {
	return eachThread(verifiedFields, func(tid string, got map[string]string) error {
		if got["NoNewPrivs"] != "1" {
			return fmt.Errorf("thread %s has no no_new_privs", tid)
		}
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			if v, ok := got[k]; !ok || strings.Trim(v, "0") != "" {
				return fmt.Errorf("thread %s keeps capabilities (%s: %s)", tid, k, v)
			}
		}
		return nil
	})
}
