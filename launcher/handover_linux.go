// The descriptors, signal dispositions and argv handed to bwrap at exec.

package launcher

import (
	"errors"
	"fmt"
	"os/signal"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"grok-sandbox/argv"
	"grok-sandbox/launcher/eventlog"
	"grok-sandbox/launcher/initbin"
	"grok-sandbox/launcher/resolve"
	"grok-sandbox/launcher/sandboxinit/initproc"
)

// maxDirectArgs is how many bwrap options go on the real command line before
// they are moved to an --args file descriptor, so that a long list never
// meets E2BIG (deep paths make each argument long).
const maxDirectArgs = 256

// bwrapArgMax is bubblewrap's own cap on the total number of arguments it
// parses, --args included.
const bwrapArgMax = 9000

// viaArgsFD returns the argv to exec for l: its options on the command line,
// or, when they are many, in a memory file handed over as --args FD. bwrap
// stops reading --args data at a "--", so the command (the init stage) is
// never put there: it always follows the "--" on the real argv. The
// descriptor is rewound (bwrap reads from the current offset to EOF) and
// left without close-on-exec; bwrap closes it after reading.
func viaArgsFD(l argv.Launch) ([]string, error) {
	if len(l.Options) <= maxDirectArgs {
		return l.Argv(), nil
	}
	if n := len(l.Options) + len(l.Command) + 4; n > bwrapArgMax {
		return nil, resolve.Refuse("the sandbox needs %d bwrap arguments, more than bubblewrap's limit of %d; grant fewer separate paths", n, bwrapArgMax)
	}
	fd, err := memFile("grok-sandbox-args", []byte(strings.Join(l.Options, "\x00")+"\x00"))
	if err != nil {
		return nil, err
	}
	out := []string{l.Bwrap, "--args", strconv.Itoa(fd), "--"}
	return append(out, l.Command...), nil
}

// memFile returns a descriptor of a memory file holding data, rewound (bwrap
// and the init stage read from the current offset to EOF) and without
// close-on-exec, so it survives the exec into bwrap.
func memFile(name string, data []byte) (int, error) {
	fd, err := unix.MemfdCreate(name, 0)
	if err != nil {
		return -1, resolve.Refuse("cannot create %s: %v", name, err)
	}
	for off := 0; off < len(data); {
		n, err := unix.Write(fd, data[off:])
		if err != nil {
			unix.Close(fd)
			return -1, resolve.Refuse("cannot write %s: %v", name, err)
		}
		off += n
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		unix.Close(fd)
		return -1, resolve.Refuse("cannot rewind %s: %v", name, err)
	}
	return fd, nil
}

// closeInherited marks every descriptor above stderr close-on-exec, so that
// nothing this process inherited (a socket, a file a shell opened) leaks into
// the sandbox; handOver then clears the flag on exactly the descriptors
// bwrap needs.
func closeInherited() error {
	if err := initproc.CloseFrom(3); err != nil {
		return resolve.Refuse("cannot close inherited descriptors: %v", err)
	}
	return nil
}

// handOver puts data on descriptor target for bwrap; nothing when data is
// nil.
func handOver(target int, data []byte) error {
	if data == nil {
		return nil
	}
	fd, err := memFile("grok-sandbox", data)
	if err != nil {
		return err
	}
	return place(fd, target)
}

// place moves fd to target, without close-on-exec.
func place(fd, target int) error {
	if err := initproc.PlaceFD(fd, target); err != nil {
		return resolve.Refuse("cannot place a descriptor for bwrap: %v", err)
	}
	return nil
}

// handOverInit places on target the executable bwrap execs as the init
// stage: grok-sandbox-init where initbin.Open finds it of this very build
// (it starts faster), else the running executable itself (opened through
// /proc/self/exe, not its path, which could be replaced meanwhile). It
// says which, and why not the former.
func handOverInit(target int) (string, error) {
	fd, why := initbin.Open()
	if fd >= 0 {
		return initbin.Name + " (the same build, beside grok-sandbox)", place(fd, target)
	}
	fd, err := unix.Open("/proc/self/exe", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", resolve.Refuse("cannot open grok-sandbox's own executable for the sandbox's init stage: %v", err)
	}
	return "grok-sandbox's own executable (" + initbin.Name + " not used: " + why + ")", place(fd, target)
}

// handOverEventLog opens the event log for the supervisor inside the
// sandbox, which cannot open it by path (it is read-only there). When it
// cannot be opened the supervisor records nothing; the launch goes on (the
// warning was given when the launch was logged).
func handOverEventLog(target int, grokHome string) error {
	f, err := eventlog.Open(grokHome)
	if err != nil {
		return nil
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return nil
	}
	return place(fd, target)
}

// handOverFuse places an O_PATH descriptor of /dev/fuse at target when
// this user may open it for reading and writing (the init stage reopens it
// inside the sandbox: a FUSE connection belongs to the user namespace it
// was opened in). Nothing is placed when it cannot be opened: the masks
// are then tmpfs files, and touches of them are not logged (explain and
// doctor say so).
func handOverFuse(target int) error {
	if ok, _ := FuseStatus(); !ok {
		return nil
	}
	fd, err := unix.Open(FuseDevice, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return place(fd, target)
}

// FuseStatus says whether the mask observer can run for this user: the
// user can open FuseDevice for reading and writing, and GROK_SANDBOX_OBSERVE
// does not say otherwise. why says why not.
func FuseStatus() (ok bool, why string) {
	if m, err := ObserveMode(); err != nil {
		return false, err.Error()
	} else if m != ObserveAll {
		return false, "GROK_SANDBOX_OBSERVE=" + string(m)
	}
	fd, err := unix.Open(FuseDevice, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENOENT) {
		return false, FuseDevice + " does not exist here (is the fuse module loaded?)"
	}
	if err != nil {
		return false, fmt.Sprintf("%s is not accessible to you (%v; distributions usually make it mode 0666)", FuseDevice, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return false, FuseDevice + " is not a character device"
	}
	return true, ""
}

// shieldFromTerminalSignals makes this process ignore SIGINT and SIGQUIT
// before it execs bwrap. bwrap's outer process stays in the terminal's
// foreground group and does not handle them: a Ctrl-C would kill it, and
// with --die-with-parent the whole sandbox with it, before the command could
// handle the signal. They are ignored rather than blocked so that the
// signal mask stays empty: the init stage catches both (it is pid 1 of the
// sandbox) and starts the command with default dispositions (but for what
// the caller ignored: initcfg.Config.Ignored, taken before this) and an
// empty mask, so the command receives Ctrl-C as usual.
func shieldFromTerminalSignals() error {
	signal.Ignore(unix.SIGINT, unix.SIGQUIT)
	return nil
}
