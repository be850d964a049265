package landlock

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The real-kernel tests re-exec the test binary with childEnv set to the
// mode (readall or strict) and rootEnv to a tree made by tree(): the child
// plans and applies the ruleset for it, tries what the sandbox may and may
// not do, and prints one "ok NAME" or "FAIL NAME: ..." line per try.
const (
	childEnv = "GROK_LANDLOCK_TEST_CHILD"
	rootEnv  = "GROK_LANDLOCK_TEST_ROOT"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(kernelChild(mode, os.Getenv(rootEnv)))
	}
	os.Exit(m.Run())
}

func TestKernel(t *testing.T) {
	if ABI() < 1 {
		t.Skip("Landlock is not available on this kernel")
	}
	users := []string{"self"}
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err == nil {
			users = append(users, "65534")
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"readall", "strict"} {
		for _, user := range users {
			t.Run(mode+"/"+user, func(t *testing.T) {
				root, err := os.MkdirTemp("", "landlock-kernel-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(root) })
				if err := os.Chmod(root, 0o755); err != nil {
					t.Fatal(err)
				}
				root = tree(t, root)
				var cmd *exec.Cmd
				if user == "self" {
					cmd = exec.Command(self)
				} else {
					// The test binary lives in a private build directory:
					// copy it where the other user can run it, and give the
					// tree to that user so that only Landlock says no.
					bin := filepath.Join(root, "outside", "landlock.test")
					if err := copyFile(self, bin); err != nil {
						t.Fatal(err)
					}
					if err := chownTree(root, 65534, 65534); err != nil {
						t.Fatal(err)
					}
					cmd = exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin)
				}
				cmd.Env = append(os.Environ(), childEnv+"="+mode, rootEnv+"="+root)
				out, err := cmd.CombinedOutput()
				oks := 0
				sc := bufio.NewScanner(bytes.NewReader(out))
				for sc.Scan() {
					line := sc.Text()
					switch {
					case strings.HasPrefix(line, "ok "):
						oks++
						t.Log(line)
					case strings.HasPrefix(line, "FAIL "):
						t.Error(line)
					default:
						t.Log(line)
					}
				}
				if err != nil {
					t.Errorf("child: %v", err)
				}
				if oks < 40 {
					t.Errorf("only %d checks passed", oks)
				}
				t.Logf("%d checks passed", oks)
			})
		}
	}
}

// TestKernelControl runs the same checks without applying the ruleset, as
// the current user: the denials must then fail, so they are Landlock's.
func TestKernelControl(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the control needs root, for whom nothing else denies")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := tree(t, "")
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"=control", rootEnv+"="+root)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("every check passed without Landlock:\n%s", out)
	}
	for _, name := range []string{"write hooks-paths", "unlink hooks-paths", "create in split GROK_HOME", "write outside", "signal the parent", "rename hooks in place", "truncate hooks-paths"} {
		if !bytes.Contains(out, []byte("FAIL "+name)) {
			t.Errorf("%q did not fail without Landlock", name)
		}
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func chownTree(root string, uid, gid int) error {
	return filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

// kernelChild restricts itself and runs the checks; its exit status is 0
// when every check passed.
func kernelChild(mode, root string) int {
	runtime.LockOSThread()
	strict := mode == "strict"
	p := testPolicy(root, polOpts{strict: strict, readOnly: []string{"ws/ro"}, protected: []string{"ws/prot/target.txt"}})
	abi := ABI()
	rs, err := RulesetFor(p, abi)
	if err != nil {
		fmt.Printf("FAIL plan: %v\n", err)
		return 1
	}
	if mode == "control" {
		fmt.Println("control run: no ruleset applied")
	} else if err := rs.Apply(); err != nil {
		fmt.Printf("FAIL apply: %v\n", err)
		return 1
	}
	fmt.Printf("uid %d, ABI %d, %d rules, mode %s\n", os.Getuid(), abi, len(rs.Rules), mode)

	failed := 0
	j := func(rel string) string { return filepath.Join(root, rel) }
	// expect: err must be nil when want is empty, else one of want.
	expect := func(name string, err error, want ...unix.Errno) {
		ok := err == nil && len(want) == 0
		for _, w := range want {
			ok = ok || errors.Is(err, w)
		}
		if ok {
			fmt.Printf("ok %s (%v)\n", name, err)
			return
		}
		failed++
		fmt.Printf("FAIL %s: got %v, want %v\n", name, err, want)
	}
	open := func(path string, flags int) error {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if flags&(unix.O_WRONLY|unix.O_RDWR) != 0 {
			_, err = unix.Write(fd, []byte("x\n"))
		}
		return err
	}
	// openOnly opens and closes without writing: for files whose write
	// would change the host (sysctls), even in the control run.
	openOnly := func(path string, flags int) error {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	read := func(path string) error { _, err := os.ReadFile(path); return err }
	write := func(path string) error { return open(path, unix.O_WRONLY|unix.O_APPEND) }
	create := func(path string) error { return open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC) }
	deniedIfStrict := func() []unix.Errno {
		if strict {
			return []unix.Errno{unix.EACCES}
		}
		return nil
	}
	moved := []unix.Errno{unix.EACCES, unix.EXDEV}
	acc := unix.EACCES

	// Reading.
	expect("read workspace file", read(j("ws/file.txt")))
	expect("read protected file", read(j("gh/hooks-paths")))
	expect("read hook", read(j("gh/hooks/h.sh")))
	expect("list split directory", func() error { _, err := os.ReadDir(j("ws")); return err }())
	expect("read outside the grants", read(j("outside/secret.txt")), deniedIfStrict()...)
	expect("read /etc/passwd", read("/etc/passwd"))

	// Writing where the policy allows it.
	expect("write file in split workspace", write(j("ws/file.txt")))
	expect("create in workspace subdirectory", create(j("ws/sub/new.txt")))
	expect("mkdir in workspace subdirectory", unix.Mkdir(j("ws/sub/d"), 0o755))
	expect("create in GROK_HOME subdirectory", create(j("gh/sessions/s.txt")))
	expect("rewrite GROK_HOME file (O_TRUNC)", create(j("gh/config.toml")))
	expect("create in tmp", create(j("tmp/x")))
	expect("write unprotected sibling of protected target", write(j("ws/prot/other.txt")))

	// Writing where it does not.
	expect("write outside", write(j("outside/secret.txt")), acc)
	expect("create outside", create(j("outside/new")), acc)
	expect("create in split workspace", create(j("ws/new")), acc)
	expect("create in split GROK_HOME", create(j("gh/new")), acc)
	expect("mkdir in split GROK_HOME", unix.Mkdir(j("gh/newdir"), 0o755), acc)
	expect("symlink in split GROK_HOME", unix.Symlink("x", j("gh/sym")), acc)
	expect("write hooks-paths", write(j("gh/hooks-paths")), acc)
	expect("write hook", write(j("gh/hooks/h.sh")), acc)
	expect("create in hooks", create(j("gh/hooks/new.sh")), acc)
	expect("write protected target in workspace", write(j("ws/prot/target.txt")), acc)
	expect("write read_only entry", write(j("ws/ro/f")), acc)
	expect("create in read_only entry", create(j("ws/ro/new")), acc)

	// Renaming, linking, removing.
	expect("rename hooks in place", unix.Rename(j("gh/hooks"), j("gh/hooks2")), acc)
	expect("move hooks to tmp", unix.Rename(j("gh/hooks"), j("tmp/hooks")), moved...)
	expect("move GROK_HOME to tmp", unix.Rename(j("gh"), j("tmp/gh")), moved...)
	expect("rename parent of protected target", unix.Rename(j("ws/prot"), j("ws/prot2")), acc)
	expect("move parent of protected target", unix.Rename(j("ws/prot"), j("tmp/prot")), moved...)
	expect("rename protected target", unix.Rename(j("ws/prot/target.txt"), j("ws/prot/t2")), acc)
	expect("move split child", unix.Rename(j("gh/sessions"), j("tmp/sessions")), moved...)
	expect("rename in tmp", unix.Rename(j("tmp/x"), j("tmp/y")))
	expect("create decoy in tmp", create(j("tmp/evil")))
	expect("rename over hooks-paths", unix.Rename(j("tmp/evil"), j("gh/hooks-paths")), moved...)
	expect("exchange with hooks-paths", unix.Renameat2(unix.AT_FDCWD, j("tmp/y"), unix.AT_FDCWD, j("gh/hooks-paths"), unix.RENAME_EXCHANGE), moved...)
	var crossDir []unix.Errno
	if abi < 2 {
		crossDir = []unix.Errno{unix.EXDEV}
	}
	expect("move between writable directories", unix.Rename(j("ws/sub/new.txt"), j("tmp/moved.txt")), crossDir...)
	expect("hard link hooks-paths into tmp", unix.Link(j("gh/hooks-paths"), j("tmp/hp")), moved...)
	expect("hard link protected target", unix.Link(j("ws/prot/target.txt"), j("ws/sub/t")), moved...)
	expect("unlink hooks-paths", unix.Unlink(j("gh/hooks-paths")), acc)
	expect("unlink hook", unix.Unlink(j("gh/hooks/h.sh")), acc)
	expect("rmdir hooks", unix.Rmdir(j("gh/hooks")), acc)
	expect("unlink protected target", unix.Unlink(j("ws/prot/target.txt")), acc)
	expect("unlink split child", unix.Unlink(j("ws/file.txt")), acc)
	expect("unlink in tmp", unix.Unlink(j("tmp/y")))

	// Truncating.
	expect("truncate in tmp", unix.Truncate(j("tmp/evil"), 0))
	expect("truncate writable file in split workspace", unix.Truncate(j("ws/prot/other.txt"), 0))
	if abi >= 3 {
		expect("truncate hooks-paths", unix.Truncate(j("gh/hooks-paths"), 0), acc)
		expect("truncate protected target", unix.Truncate(j("ws/prot/target.txt"), 0), acc)
		expect("truncate outside", unix.Truncate(j("outside/secret.txt"), 0), acc)
	}
	expect("open hooks-paths with O_TRUNC", create(j("gh/hooks-paths")), acc)

	// Devices and /proc.
	expect("write /dev/null (O_TRUNC)", create("/dev/null"))
	expect("read /dev/urandom", open("/dev/urandom", unix.O_RDONLY))
	// /proc is read-only: sysctls and sysrq-trigger check only the uid,
	// so root without capabilities could rewrite the host's. (Opened, never
	// written: a regression must not change the host.)
	expect("open /proc/self/comm for writing", openOnly("/proc/self/comm", unix.O_WRONLY), acc)
	expect("open kernel.core_pattern for writing", openOnly("/proc/sys/kernel/core_pattern", unix.O_WRONLY), acc)
	if _, err := os.Stat("/proc/sysrq-trigger"); err == nil {
		expect("open /proc/sysrq-trigger for writing", openOnly("/proc/sysrq-trigger", unix.O_WRONLY), acc)
	}
	expect("read /proc/self/status", openOnly("/proc/self/status", unix.O_RDONLY))

	// Signals.
	expect("signal itself", unix.Kill(os.Getpid(), 0))
	if abi >= 6 {
		expect("signal the parent outside the sandbox", unix.Kill(os.Getppid(), 0), unix.EPERM)
	}

	// A documented limit: metadata is not governed.
	expect("chmod protected file (Landlock limit)", unix.Chmod(j("gh/hooks-paths"), 0o644))

	// A child process is restricted too.
	sh := func(script string) error { return exec.Command("/bin/sh", "-c", script).Run() }
	shDenied := func(name, script string) {
		if err := sh(script); err == nil {
			failed++
			fmt.Printf("FAIL %s: the shell succeeded\n", name)
		} else {
			fmt.Printf("ok %s (%v)\n", name, err)
		}
	}
	expect("shell writes tmp, /dev/null, reads workspace",
		sh(fmt.Sprintf("echo x > %s && echo y > /dev/null && cat %s > /dev/null", j("tmp/fromsh"), j("ws/file.txt"))))
	shDenied("shell appends to hooks-paths", fmt.Sprintf("echo x >> %s", j("gh/hooks-paths")))
	shDenied("shell writes outside", fmt.Sprintf("echo x > %s", j("outside/fromsh")))
	shDenied("shell moves hooks", fmt.Sprintf("mv %s %s", j("gh/hooks"), j("tmp/h")))
	shDenied("grandchild writes protected target", fmt.Sprintf("/bin/sh -c 'echo x > %s'", j("ws/prot/target.txt")))
	if strict {
		shDenied("shell reads outside under strict", fmt.Sprintf("cat %s", j("outside/secret.txt")))
	} else {
		expect("shell reads outside", sh(fmt.Sprintf("cat %s > /dev/null", j("outside/secret.txt"))))
	}

	if failed > 0 {
		return 1
	}
	return 0
}
