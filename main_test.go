package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"grok-sandbox/launcher/sandboxinit/initcfg"
)

func TestMain(m *testing.M) {
	// bwrap execs the init stage as /proc/self/fd/N, a name testscript
	// cannot dispatch on; main.go dispatches on the first argument.
	if len(os.Args) > 1 && os.Args[1] == initcfg.Command {
		os.Exit(run(os.Args))
	}
	testscript.Main(removeSeedAfter{m}, map[string]func(){
		"grok-sandbox": func() {
			// GROK_SANDBOX_TEST_PAIR names a directory holding a
			// grok-sandbox and a grok-sandbox-init built together (see
			// .ci/run): the scripts then run that launcher, whose init
			// stage is the other.
			if dir := os.Getenv(pairEnv); dir != "" {
				bin := filepath.Join(dir, "grok-sandbox")
				err := syscall.Exec(bin, os.Args, os.Environ())
				fmt.Fprintf(os.Stderr, "exec %s: %v\n", bin, err)
				os.Exit(127)
			}
			os.Exit(run(os.Args))
		},
		"netprobe": func() { os.Exit(probeMain()) },
	})
}

// pairEnv names the directory of a grok-sandbox and grok-sandbox-init built
// together, which the scripts' grok-sandbox then is.
const pairEnv = "GROK_SANDBOX_TEST_PAIR"

// moduleRoot is where go test runs this package: the module's root, from
// which buildpair builds.
var moduleRoot, _ = os.Getwd()

// removeSeedAfter runs the tests, then removes the Go build cache goseed
// made, if any.
type removeSeedAfter struct{ m *testing.M }

func (r removeSeedAfter) Run() int {
	// A test run started ignoring SIGHUP or SIGINT (under nohup, or as a
	// background job of a script) would pass that on to every command the
	// scripts run, and a command run by grok-sandbox ignores what its
	// caller ignored: the scripts would see those ignored where they expect
	// the default. This process keeps ignoring them (it drops them) while
	// the commands it starts begin with the default; a script that wants
	// them ignored says so (testdata/enforce/signals_ignored_by_the_caller).
	// So under `nohup go test` a hangup still leaves this process running,
	// but no longer the scripts' commands.
	if ignored := initcfg.Signals(initcfg.IgnoredBy(signal.Ignored)); len(ignored) > 0 {
		c := make(chan os.Signal, 1)
		signal.Notify(c, ignored...)
		go func() {
			for range c {
			}
		}()
	}
	code := r.m.Run()
	if goSeed.base != "" {
		os.RemoveAll(goSeed.base)
	}
	return code
}

// unprivileged is the uid and gid the enforcement scripts run as in their
// second pass, so that every promise is shown to hold for an ordinary user
// as well as for root.
const unprivileged = "65534"

// TestGolden pins what users see without running a sandbox: print, explain,
// errors and warnings.
func TestGolden(t *testing.T) {
	p := params(t, "testdata/golden", false)
	p.WorkdirRoot = fixedLengthTempDir(t)
	testscript.Run(t, p)
}

// fixedLengthTempDir is a new directory in the temporary directory whose
// name has the same length in every run (os.MkdirTemp's does not): explain
// aligns its table to the longest path, so the padding in a golden depends
// on the length of $WORK.
func fixedLengthTempDir(t *testing.T) string {
	for range 100 {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("grok-golden-%08x", rand.Uint32()))
		if err := os.Mkdir(dir, 0o755); errors.Is(err, os.ErrExist) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	t.Fatal("no free name for the golden scripts' directory")
	return ""
}

// TestEnforce runs the real-kernel scripts as the current user (root in CI).
func TestEnforce(t *testing.T) {
	testscript.Run(t, params(t, "testdata/enforce", false))
}

// TestEnforceUnprivileged runs the same scripts again as uid 65534. It needs
// root to switch user; as an ordinary user TestEnforce already is this run.
func TestEnforceUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: TestEnforce already runs as an unprivileged user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is missing")
	}
	testscript.Run(t, params(t, "testdata/enforce", true))
}

func params(t *testing.T, dir string, asUser bool) testscript.Params {
	realKernel := strings.HasSuffix(dir, "enforce") || strings.HasSuffix(dir, "agents")
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: false,
		Setup: func(env *testscript.Env) error {
			env.Setenv("TSROOT", filepath.Dir(env.WorkDir))
			if dir := os.Getenv(pairEnv); dir != "" {
				env.Setenv(pairEnv, dir) // testscript passes on few variables
			}
			root := env.WorkDir
			if realKernel {
				// The temporary directories are writable under every
				// profile: a home or workspace there would make "cannot
				// write" tests pass or fail for the wrong reason.
				var err error
				if root, err = outsideTemp(); err != nil {
					return err
				}
				env.Defer(func() { os.RemoveAll(root) })
			}
			env.Setenv("ROOT", root)
			home := filepath.Join(root, "home")
			ws := filepath.Join(root, "ws")
			if !realKernel {
				// The golden scripts' workspace is $WORK, and a workspace
				// that contains home is refused: home lives beside $WORK,
				// and the archive's home/ moves there.
				home = filepath.Join(env.WorkDir+".home", "home")
				if err := os.MkdirAll(filepath.Dir(home), 0o755); err != nil {
					return err
				}
				if err := os.Rename(filepath.Join(env.WorkDir, "home"), home); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
			for _, d := range []string{home, ws} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			if realKernel {
				// Move the archive's files into the workspace.
				if err := moveArchive(env.WorkDir, ws); err != nil {
					return err
				}
			}
			env.Setenv("HOME", home)
			env.Setenv("GROK_HOME", "")
			if !realKernel {
				// What explain says of the mask observer depends on the
				// host's /dev/fuse: the goldens pin the one without.
				env.Setenv("GROK_SANDBOX_OBSERVE", "nofuse")
			}
			// GROK_SANDBOX is left unset: set but empty is a refusal.
			vars := env.Vars[:0]
			for _, kv := range env.Vars {
				if !strings.HasPrefix(kv, "GROK_SANDBOX=") {
					vars = append(vars, kv)
				}
			}
			env.Vars = vars
			env.Setenv("WS", ws)
			if realKernel {
				env.Cd = ws
			}
			if asUser {
				env.Setenv("ASUSER", unprivileged)
				if err := handOver(env.WorkDir); err != nil {
					return err
				}
				return handOver(root)
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "bwrap":
				return bwrapWorks(), nil
			case "asuser":
				return asUser, nil
			case "root":
				return os.Geteuid() == 0 && !asUser, nil
			case "harnessroot":
				// The test process itself is root (in both passes), so
				// exec steps may prepare host paths such as /data.
				return os.Geteuid() == 0, nil
			case "fuse":
				return fuseWorks(asUser)
			case "pair":
				// The scripts' grok-sandbox is a launcher built with its
				// init stage's own executable (pairEnv).
				return os.Getenv(pairEnv) != "", nil
			case "cgo":
				// The init stage re-execs itself after the masks (and
				// starts a net helper process) instead of going on in
				// place.
				return linkedCgo, nil
			case "nodata":
				_, err := os.Lstat("/data")
				return os.IsNotExist(err), nil
			}
			if name, ok := strings.CutPrefix(cond, "tool:"); ok {
				return systemTool(name)
			}
			return false, errors.New("unknown condition " + cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// as runs a command as the script's user: root, or uid 65534
			// in the unprivileged pass.
			"as": func(ts *testscript.TestScript, neg bool, args []string) {
				runAs(ts, neg, args)
			},
			// cmpgolden compares stdout or stderr, with the script's
			// directories written as $HOME, $WORK, $ROOT and $TSROOT, against
			// testdata/golden/out/NAME. UPDATE_GOLDEN=1 rewrites the file
			// instead: read the diff before committing it.
			"cmpgolden": cmpGolden,
			// goseed GO DIR makes DIR a Go build cache that already holds
			// what a test of net/http/httptest compiles (see goSeed).
			"goseed": goseed,
			// nobwrap makes bwrap missing: GROK_SANDBOX_BWRAP names a
			// file that does not exist (grok-sandbox never looks on PATH),
			// and PATH holds links to every program but bwrap.
			"nobwrap": func(ts *testscript.TestScript, neg bool, args []string) {
				ts.Setenv("PATH", pathWithout(ts, "bwrap"))
				ts.Setenv("GROK_SANDBOX_BWRAP", ts.MkAbs("no-bwrap-here/bwrap"))
			},
			// fakebwrap makes GROK_SANDBOX_BWRAP a stand-in that fails the
			// way bwrap does under Ubuntu's AppArmor restriction.
			"fakebwrap": func(ts *testscript.TestScript, neg bool, args []string) {
				dir := ts.MkAbs("fakebin")
				ts.Check(os.MkdirAll(dir, 0o755))
				script := "#!/bin/sh\ncase \"$1\" in --version) echo 'bubblewrap 0.8.0'; exit 0;; esac\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
				ts.Check(os.WriteFile(filepath.Join(dir, "bwrap"), []byte(script), 0o755))
				ts.Setenv("PATH", dir+string(filepath.ListSeparator)+ts.Getenv("PATH"))
				ts.Setenv("GROK_SANDBOX_BWRAP", filepath.Join(dir, "bwrap"))
			},
			// systools makes PATH the test's own commands, then only the
			// system directories (systemDirs): the toolchain recipes run
			// the tools a distribution installs, which uid 65534 can run
			// and strict exposes, never root's ~/.cargo/bin or pyenv shims.
			"systools": func(ts *testscript.TestScript, neg bool, args []string) {
				var keep []string
				for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
					if _, err := os.Stat(filepath.Join(dir, "grok-sandbox")); err == nil {
						keep = append(keep, dir)
					}
				}
				ts.Setenv("PATH", strings.Join(append(keep, systemDirs...), string(filepath.ListSeparator)))
			},
			// managed runs a command as the script's user with an
			// administrator's requirements file: in a private mount
			// namespace whose /etc is an overlay holding
			// /etc/grok-sandbox/requirements.toml, a copy of FILE (root's,
			// mode 0644, its directory 0755 unless -mode, -dirmode or
			// -owner say otherwise). The host's /etc is never touched, and
			// no variable or flag of the launcher points it elsewhere.
			// Needs the harness to be root.
			"managed": managed,
			// buildpair [-tag T] [-launcher | -skewed-init] DIR builds
			// grok-sandbox and grok-sandbox-init into DIR in one go
			// build, as the README does, with the build tag
			// grok_sandbox_build_T (default "test") vouching that they
			// are of one build (the test tree may have uncommitted
			// changes, and records no revision where -buildvcs is off);
			// -launcher builds grok-sandbox alone, -skewed-init
			// grok-sandbox-init alone with another config layout. Linked
			// with cgo where this test binary is.
			"buildpair": buildPair,
			// sandbox is `grok-sandbox run` as the script's user.
			"sandbox": func(ts *testscript.TestScript, neg bool, args []string) {
				runAs(ts, neg, append([]string{"grok-sandbox", "run"}, args...))
			},
		},
	}
}

// pathWithout returns a PATH in which no directory holds name: the
// directory of the test's own commands, then one directory of links to
// every other program of the script's PATH.
func pathWithout(ts *testscript.TestScript, name string) string {
	links := ts.MkAbs("path-without-" + name)
	ts.Check(os.MkdirAll(links, 0o755))
	var keep []string
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, "grok-sandbox")); err == nil {
			keep = append(keep, dir)
			continue
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			link := filepath.Join(links, e.Name())
			if e.Name() == name {
				continue
			}
			if _, err := os.Lstat(link); err == nil {
				continue
			}
			os.Symlink(filepath.Join(dir, e.Name()), link)
		}
	}
	return strings.Join(append(keep, links), string(filepath.ListSeparator))
}

var goldenDir, _ = filepath.Abs("testdata/golden/out")

func cmpGolden(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || (args[0] != "stdout" && args[0] != "stderr") {
		ts.Fatalf("usage: cmpgolden stdout|stderr NAME")
	}
	got := ts.ReadFile(args[0])
	if bin, err := exec.LookPath("grok-sandbox"); err == nil {
		if bin, err = filepath.EvalSymlinks(bin); err == nil {
			got = strings.ReplaceAll(got, bin, "$BIN")
		}
	}
	for _, v := range []string{"HOME", "WORK", "ROOT", "TSROOT"} {
		if dir := ts.Getenv(v); dir != "" && dir != "/" {
			got = strings.ReplaceAll(got, dir, "$"+v)
		}
	}
	got = withoutHostPaths(got)
	// Who the command runs as is whoever runs the tests.
	got = strings.ReplaceAll(got, fmt.Sprintf("uid %d, gid %d", os.Getuid(), os.Getgid()), "uid $UID, gid $GID")
	got = strings.ReplaceAll(got, fmt.Sprintf("\"uid\": %d,", os.Getuid()), "\"uid\": $UID,")
	got = strings.ReplaceAll(got, fmt.Sprintf("\"gid\": %d,", os.Getgid()), "\"gid\": $GID,")
	file := filepath.Join(goldenDir, args[1])
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		ts.Check(os.MkdirAll(goldenDir, 0o755))
		ts.Check(os.WriteFile(file, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(file)
	ts.Check(err)
	if got != string(want) {
		ts.Logf("--- %s (want)\n+++ %s (got)\n%s", file, args[0], lineDiff(string(want), got))
		ts.Fatalf("%s differs from %s (UPDATE_GOLDEN=1 rewrites it)", args[0], args[1])
	}
}

// hostDependentPaths are the system paths strict exposes only where the
// host has them: multilib's /lib32 and /libx32, and /etc/resolv.conf's
// target when it lies outside /etc and /usr. The goldens are written on a
// host without them; strict_root_granted checks them against the host.
func hostDependentPaths() []string {
	paths := []string{"/lib32", "/libx32", "usr/lib32", "usr/libx32"}
	if c, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil &&
		!strings.HasPrefix(c, "/etc/") && !strings.HasPrefix(c, "/usr/") {
		paths = append(paths, c)
	}
	return paths
}

// withoutHostPaths drops what strict renders for hostDependentPaths: the
// argv's "--ro-bind P P" and "--symlink T P" triples and explain's lines.
func withoutHostPaths(out string) string {
	host := hostDependentPaths()
	mentions := func(line string) bool {
		for _, p := range host {
			if line == p || strings.Contains(line, " "+p+" ") || strings.HasSuffix(line, " "+p) {
				return true
			}
		}
		return false
	}
	lines := strings.Split(out, "\n")
	var kept []string
	for i := 0; i < len(lines); i++ {
		if (lines[i] == "--ro-bind" || lines[i] == "--symlink") && i+2 < len(lines) && (mentions(lines[i+1]) || mentions(lines[i+2])) {
			i += 2
			continue
		}
		if mentions(lines[i]) {
			continue
		}
		kept = append(kept, lines[i])
	}
	return strings.Join(kept, "\n")
}

// lineDiff shows the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	in := func(lines []string) map[string]int {
		m := map[string]int{}
		for _, l := range lines {
			m[l]++
		}
		return m
	}
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	wm, gm := in(wl), in(gl)
	var b strings.Builder
	for _, l := range wl {
		if gm[l] == 0 {
			b.WriteString("-" + l + "\n")
		}
	}
	for _, l := range gl {
		if wm[l] == 0 {
			b.WriteString("+" + l + "\n")
		}
	}
	return b.String()
}

func runAs(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: as COMMAND [ARG...]")
	}
	execExpect(ts, neg, asScriptUser(ts, args))
}

// asScriptUser is args run as the script's user: setpriv to uid 65534 in
// the unprivileged pass, as they are otherwise.
func asScriptUser(ts *testscript.TestScript, args []string) []string {
	if u := ts.Getenv("ASUSER"); u != "" {
		return append([]string{"setpriv", "--reuid=" + u, "--regid=" + u, "--clear-groups", "--"}, args...)
	}
	return args
}

// execExpect runs args and fails the script unless the outcome is the
// one asked for (neg: a failure).
func execExpect(ts *testscript.TestScript, neg bool, args []string) {
	err := ts.Exec(args[0], args[1:]...)
	if err != nil {
		ts.Logf("[%v]", err)
		if !neg {
			ts.Fatalf("unexpected failure")
		}
		return
	}
	if neg {
		ts.Fatalf("unexpected success")
	}
}

const managedScript = `set -e
t=$1 f=$2 mode=$3 dirmode=$4 owner=$5
shift 5
mount -t tmpfs -o mode=0755 tmpfs "$t"
mkdir -m 0755 "$t/upper" "$t/work"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$t/upper,workdir=$t/work" /etc
mkdir -p /etc/grok-sandbox
chmod "$dirmode" /etc/grok-sandbox
cp "$f" /etc/grok-sandbox/requirements.toml
chmod "$mode" /etc/grok-sandbox/requirements.toml
chown "$owner" /etc/grok-sandbox/requirements.toml
exec "$@"
`

func managed(ts *testscript.TestScript, neg bool, args []string) {
	mode, dirmode, owner := "0644", "0755", "0"
	for len(args) > 1 {
		switch args[0] {
		case "-mode":
			mode = args[1]
		case "-dirmode":
			dirmode = args[1]
		case "-owner":
			owner = args[1]
		default:
			goto done
		}
		args = args[2:]
	}
done:
	if len(args) < 2 {
		ts.Fatalf("usage: managed [-mode M] [-dirmode M] [-owner UID] FILE COMMAND [ARG...]")
	}
	if os.Geteuid() != 0 {
		ts.Fatalf("managed needs the harness to be root (gate the script with [!harnessroot] skip)")
	}
	dir, err := os.MkdirTemp(ts.MkAbs("."), "managed-etc-")
	ts.Check(err)
	full := append([]string{"unshare", "-m", "sh", "-c", managedScript, "sh", dir, ts.MkAbs(args[0]), mode, dirmode, owner}, asScriptUser(ts, args[1:])...)
	execExpect(ts, neg, full)
}

// handOver gives the unprivileged user the script's work tree, and the
// directories above it and the test binary enough permissions to reach them.
func handOver(work string) error {
	for d := filepath.Dir(work); d != "/"; d = filepath.Dir(d) {
		if strings.HasPrefix(d, os.TempDir()) && d != os.TempDir() {
			if err := os.Chmod(d, 0o755); err != nil {
				return err
			}
		}
	}
	if bin, err := exec.LookPath("grok-sandbox"); err == nil {
		for d := filepath.Dir(bin); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				return err
			}
		}
	}
	return filepath.Walk(work, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, 65534, 65534)
	})
}

// goSeed is a Go build cache holding the standard packages a test of
// net/http/httptest compiles, made once per test process by the go
// command a script names, outside any sandbox, in the environment the
// scripts' go commands get (testscript's: PATH, no CGO_ENABLED). Compiling
// them took a script about a minute on a 2-core machine, in each pass and
// each cgo run; what such a script checks is the test binary's run in the
// sandbox, and its own package is still compiled there.
var goSeed struct {
	once      sync.Once
	base, dir string
	err       error
}

const goSeedTest = `package seed

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestSeed(t *testing.T) {
	httptest.NewServer(http.NotFoundHandler()).Close()
}
`

func goseed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: goseed GO DIR")
	}
	goSeed.once.Do(func() {
		base, err := outsideTemp()
		if err != nil {
			goSeed.err = err
			return
		}
		goSeed.base = base
		mod, cache := filepath.Join(base, "mod"), filepath.Join(base, "cache")
		for name, text := range map[string]string{"go.mod": "module seed\n\ngo 1.21\n", "seed_test.go": goSeedTest} {
			if err := os.MkdirAll(mod, 0o755); err != nil {
				goSeed.err = err
				return
			}
			if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
				goSeed.err = err
				return
			}
		}
		cmd := exec.Command(args[0], "test", "-c", "-vet=off", "-o", filepath.Join(base, "seed.test"), ".")
		cmd.Dir = mod
		cmd.Env = []string{"PATH=" + ts.Getenv("PATH"), "HOME=" + base, "GOCACHE=" + cache, "GOPATH=" + filepath.Join(base, "gopath"),
			"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local",
			// It runs outside any sandbox, in a directory a devbox
			// sandbox can write (/var/lib): no go/env file there (a
			// planted CC= or GOCACHEPROG= would run as this user).
			"GOENV=off"}
		if out, err := cmd.CombinedOutput(); err != nil {
			goSeed.err = fmt.Errorf("%v: %s", err, out)
			return
		}
		goSeed.dir = cache
	})
	if goSeed.err != nil {
		ts.Fatalf("goseed: %v", goSeed.err)
	}
	dst := ts.MkAbs(args[1])
	ts.Check(exec.Command("cp", "-a", goSeed.dir, dst).Run())
	if ts.Getenv("ASUSER") != "" {
		ts.Check(filepath.Walk(dst, func(path string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, 65534, 65534)
		}))
	}
}

// outsideTemp makes a directory for a script's home and workspace that is
// not below /tmp or /var/tmp.
func outsideTemp() (string, error) {
	base := "/var/lib/grok-sandbox-tests"
	if os.Geteuid() != 0 {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(cache, "grok-sandbox-tests")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(base, "script")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(dir)
}

// moveArchive moves the files a script's archive put in $WORK into the
// workspace, so scripts name them relative to the workspace as usual.
func moveArchive(work, ws string) error {
	ents, err := os.ReadDir(work)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == ".tmp" {
			continue
		}
		if out, err := exec.Command("cp", "-a", filepath.Join(work, e.Name()), ws).CombinedOutput(); err != nil {
			return fmt.Errorf("copying the archive: %v: %s", err, out)
		}
	}
	return nil
}

// systemDirs are where the toolchain scripts take their tools from: where
// Debian's packages (go through /usr/bin/go -> /usr/lib/go-N) and the
// official Go archive (/usr/local/go) put them.
var systemDirs = []string{"/usr/local/go/bin", "/usr/local/bin", "/usr/bin", "/bin"}

// systemTool is the condition [tool:NAME]: NAME is installed in a system
// directory (python3-venv: python3 there can make a virtualenv with pip).
// Outside CI a missing tool skips the script; in CI (CI set) it fails the
// run, since .ci/run installs every tool the scripts use and a skipped
// script there would be a recipe left untested.
func systemTool(name string) (bool, error) {
	prog, check := name, []string(nil)
	if name == "python3-venv" {
		prog, check = "python3", []string{"-c", "import ensurepip, venv"}
	}
	found := false
	for _, dir := range systemDirs {
		path := filepath.Join(dir, prog)
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			found = check == nil || exec.Command(path, check...).Run() == nil
			break
		}
	}
	if !found && os.Getenv("CI") != "" {
		return false, fmt.Errorf("CI: %s is not installed in %s; .ci/run must install it", name, strings.Join(systemDirs, ", "))
	}
	return found, nil
}

// bwrapWorks reports whether bubblewrap can make a sandbox here. In CI it
// must: a real-kernel script skipped there would be a promise left untested.
var bwrapWorks = sync.OnceValue(func() bool {
	cmd := exec.Command("bwrap", "--unshare-user", "--ro-bind", "/", "/", "--", "true")
	var out bytes.Buffer
	cmd.Stderr = &out
	ok := cmd.Run() == nil
	if !ok && os.Getenv("CI") != "" {
		panic("CI: bubblewrap is not usable, so the enforcement tests cannot run: " + out.String())
	}
	return ok
})

// fuseWorks reports whether the script's user (root, or uid 65534 in the
// unprivileged pass) can open /dev/fuse for reading and writing, as the
// mask observer needs. In CI it must: .ci/run gives /dev/fuse the mode
// 0666 that Debian's udev gives it, and a script that skipped the observer
// there would leave a promise untested.
func fuseWorks(asUser bool) (bool, error) {
	args := []string{"sh", "-c", "exec 3<>/dev/fuse"}
	if asUser {
		args = append([]string{"setpriv", "--reuid=" + unprivileged, "--regid=" + unprivileged, "--clear-groups"}, args...)
	}
	ok := exec.Command(args[0], args[1:]...).Run() == nil
	if !ok && os.Getenv("CI") != "" {
		return false, errors.New("CI: /dev/fuse cannot be opened by the script's user; .ci/run must make it mode 0666")
	}
	return ok, nil
}

func buildPair(ts *testscript.TestScript, neg bool, args []string) {
	tag, pkgs := "test", []string{".", "./launcher/sandboxinit/grok-sandbox-init"}
	var flags []string
	for len(args) > 1 {
		switch args[0] {
		case "-tag":
			tag, args = args[1], args[2:]
			continue
		case "-launcher":
			pkgs, args = pkgs[:1], args[1:]
			continue
		case "-skewed-init":
			// grok-sandbox-init alone, its config one field longer
			// through a go build -overlay, which its build record does
			// not show: the record matches, the layout does not.
			src := filepath.Join(moduleRoot, "launcher/sandboxinit/initcfg/config.go")
			data, err := os.ReadFile(src)
			ts.Check(err)
			skewed := strings.Replace(string(data), "type Config struct {\n", "type Config struct {\n\tSkewedForTest string\n", 1)
			if skewed == string(data) {
				ts.Fatalf("buildpair: no Config struct in %s", src)
			}
			file, overlay := ts.MkAbs("skewed-config.go"), ts.MkAbs("overlay.json")
			ts.Check(os.WriteFile(file, []byte(skewed), 0o644))
			ts.Check(os.WriteFile(overlay, []byte(`{"Replace":{`+strconv.Quote(src)+`:`+strconv.Quote(file)+`}}`), 0o644))
			pkgs, flags, args = pkgs[1:], []string{"-overlay", overlay}, args[1:]
			continue
		}
		break
	}
	if len(args) != 1 || neg {
		ts.Fatalf("usage: buildpair [-tag T] [-launcher | -skewed-init] DIR")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	cgo := "0"
	if linkedCgo {
		cgo = "1"
	}
	cmd := exec.Command("go", append(append([]string{"build", "-tags", "urfave_cli_no_docs,grok_sandbox_build_" + tag, "-trimpath", "-o", dir + "/"}, flags...), pkgs...)...)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
	if out, err := cmd.CombinedOutput(); err != nil {
		ts.Fatalf("go build: %v\n%s", err, out)
	}
}
