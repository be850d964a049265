// The descriptors, signal mask and argv handed to bwrap at exec.

package launcher

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxDirectArgs is how many bwrap options go on the real command line before
// they are moved to an --args file descriptor, so that a long list never
// meets E2BIG (deep paths make each argument long).
const maxDirectArgs = 256

// bwrapArgMax is bubblewrap's own cap on the total number of arguments it
// parses, --args included.
const bwrapArgMax = 9000

// viaArgsFD moves bwrap's options (between argv[0] and the "--" before the
// command) into a memory file handed over as --args FD. The command stays on
// the real argv. The descriptor is rewound (bwrap reads from the current
// offset to EOF) and is the only one this launch leaves without
// close-on-exec; bwrap closes it after reading.
func viaArgsFD(argv []string, sep int) ([]string, error) {
	opts := argv[1:sep]
	if len(opts) <= maxDirectArgs {
		return argv, nil
	}
	if len(argv) > bwrapArgMax {
		return nil, refuse("the sandbox needs %d bwrap arguments, more than bubblewrap's limit of %d; deny fewer paths (anchor globs deeper)", len(argv), bwrapArgMax)
	}
	fd, err := memFile("grok-sandbox-args", []byte(strings.Join(opts, "\x00")+"\x00"))
	if err != nil {
		return nil, err
	}
	out := []string{argv[0], "--args", strconv.Itoa(fd)}
	return append(out, argv[sep:]...), nil
}

// memFile returns a descriptor of a memory file holding data, rewound (bwrap
// and the init stage read from the current offset to EOF) and without
// close-on-exec, so it survives the exec into bwrap.
func memFile(name string, data []byte) (int, error) {
	fd, err := unix.MemfdCreate(name, 0)
	if err != nil {
		return -1, refuse("cannot create %s: %v", name, err)
	}
	for off := 0; off < len(data); {
		n, err := unix.Write(fd, data[off:])
		if err != nil {
			unix.Close(fd)
			return -1, refuse("cannot write %s: %v", name, err)
		}
		off += n
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		unix.Close(fd)
		return -1, refuse("cannot rewind %s: %v", name, err)
	}
	return fd, nil
}

// closeInherited marks every descriptor above stderr close-on-exec, so that
// nothing this process inherited (a socket, a file a shell opened) leaks into
// the sandbox; handOver then clears the flag on exactly the descriptors
// bwrap needs.
func closeInherited() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Kernels before 5.11: walk the open descriptors.
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return refuse("cannot close inherited descriptors: %v", err)
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// handOver puts data on descriptor target for bwrap; nothing when data is
// nil. Only these descriptors and the --args one lose close-on-exec.
func handOver(target int, data []byte) error {
	if data == nil {
		return nil
	}
	fd, err := memFile("grok-sandbox", data)
	if err != nil {
		return err
	}
	if fd != target {
		if err := unix.Dup3(fd, target, 0); err != nil {
			unix.Close(fd)
			return refuse("cannot place a descriptor for bwrap: %v", err)
		}
		unix.Close(fd)
	}
	return nil
}

// shieldFromTerminalSignals blocks SIGINT and SIGQUIT on the calling thread
// before it execs bwrap. bwrap's outer process stays in the terminal's
// foreground group and does not handle them: a Ctrl-C would kill it, and
// with --die-with-parent the whole sandbox with it, before the command could
// handle the signal. Blocked (not ignored) signals stay pending in that
// process, while bwrap gives the sandboxed process an empty mask, so the
// command receives Ctrl-C as usual.
func shieldFromTerminalSignals() error {
	var set unix.Sigset_t
	for _, sig := range []unix.Signal{unix.SIGINT, unix.SIGQUIT} {
		set.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
		return refuse("cannot block terminal signals for bwrap: %v", err)
	}
	return nil
}
