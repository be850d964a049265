package initbin

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/seccomp"
)

// The answer where faccessat2 is refused (an older kernel's ENOSYS, a
// container's seccomp profile's EPERM) is the kernel's own, for root and,
// when the test runs as root, for uid 65534: each thread below asks from
// its own ids, one with faccessat2 refused by a filter of its own, one
// without.
func TestExecutableWithoutFaccessat2(t *testing.T) {
	dir := t.TempDir()
	root := os.Geteuid() == 0
	type file struct {
		name     string
		mode     os.FileMode
		uid, gid int // -1: the test's own
		rootOnly bool
	}
	files := []file{
		{"all", 0o755, -1, -1, false},
		{"owner", 0o700, -1, -1, false},
		{"none", 0o644, -1, -1, false},
		{"others", 0o001, -1, -1, false},
		{"group-of-nobody", 0o070, 0, 65534, true},
		{"nobodys-without-owner-bit", 0o607, 65534, 65534, true},
	}
	var fds []int
	for _, f := range files {
		if f.rootOnly && !root {
			continue
		}
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if f.uid >= 0 {
			if err := os.Chown(p, f.uid, f.gid); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		fds = append(fds, fd)
	}
	ids := []int{os.Geteuid()}
	if root {
		ids = append(ids, 65534)
	}
	for _, id := range ids {
		// The kernel's answers, then the answers with faccessat2 refused,
		// each from a thread of its own that takes id as its effective
		// uid and gid (no supplementary group), and ends with the test.
		want := onThread(t, id, 0, func(fd int, st *unix.Stat_t) bool {
			return unix.Faccessat2(fd, "", unix.X_OK, unix.AT_EMPTY_PATH|unix.AT_EACCESS) == nil
		}, fds)
		for _, refusal := range []unix.Errno{unix.ENOSYS, unix.EPERM} {
			got := onThread(t, id, refusal, executable, fds)
			for i := range fds {
				if got[i] != want[i] {
					t.Errorf("euid %d, faccessat2 refused with %v: %s: executable says %v, the kernel %v", id, refusal, files[i].name, got[i], want[i])
				}
			}
		}
	}
}

// onThread calls ask for each of fds on a new thread with effective uid
// and gid id (its supplementary groups none, as root only can set them:
// then), and, when refusal is not 0, a filter that refuses faccessat2 with
// it. The thread is never given back to the runtime.
func onThread(t *testing.T, id int, refusal unix.Errno, ask func(int, *unix.Stat_t) bool, fds []int) []bool {
	t.Helper()
	type result struct {
		answers []bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		fail := func(err error) { done <- result{err: err} }
		if os.Geteuid() == 0 {
			// Raw calls: the thread's own credentials, not the process's.
			if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
				fail(e)
				return
			}
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(id), ^uintptr(0)); e != 0 {
				fail(e)
				return
			}
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(id), ^uintptr(0)); e != 0 {
				fail(e)
				return
			}
		}
		if refusal != 0 {
			prog, err := bpf.Assemble([]bpf.Instruction{
				bpf.LoadAbsolute{Off: 0, Size: 4}, // the syscall's number
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_FACCESSAT2, SkipFalse: 1},
				bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(refusal)},
				bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
			})
			if err == nil {
				err = seccomp.Install(prog)
			}
			if err != nil {
				fail(err)
				return
			}
			// The filter holds on this thread.
			if err := unix.Faccessat2(fds[0], "", unix.X_OK, unix.AT_EMPTY_PATH|unix.AT_EACCESS); err != refusal {
				fail(err)
				return
			}
		}
		var r result
		for _, fd := range fds {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				fail(err)
				return
			}
			r.answers = append(r.answers, ask(fd, &st))
		}
		done <- r
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("euid %d, refusal %v: %v", id, refusal, r.err)
	}
	return r.answers
}
