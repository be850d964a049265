package childnet

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The descriptors pid 1 copies out of children (pidfd_getfd: the socket of
// a call it makes for them, the descriptors of their SCM_RIGHTS) are
// closed here, never on the notification loop's thread: a close that drops
// the last reference can wait, for as long as a child likes (a TCP socket
// with SO_LINGER and unsent data waits out its linger time), and the loop
// answers the wrapped command's calls too. A few threads close them; a
// close that takes longer than closeStuck is interrupted with a signal
// the Go runtime takes in its stride (SIGURG, its own preemption signal),
// which ends the kernel's wait (the socket is then closed in the
// background, as one without SO_LINGER: the child's own close, which
// came first, did not wait either). While too many copies are held, the
// calls that would copy more fail with EAGAIN or ENOBUFS (backlogged), well
// before this process runs out of descriptors.

const (
	closers    = 4
	closeQueue = 1 << 16
	closeStuck = 10 * time.Millisecond
)

var closer struct {
	once sync.Once
	fds  chan int
	// held counts the copies taken and not yet closed; limit, how many
	// may be (half of RLIMIT_NOFILE, less a message's worth).
	held  atomic.Int64
	limit int64
}

func startCloser() {
	closer.fds = make(chan int, closeQueue)
	closer.limit = closeQueue / 2
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur < uint64(closer.limit)*2 {
		closer.limit = max(int64(rl.Cur)/2-2*scmMaxFD, 64)
	}
	for i := 0; i < closers; i++ {
		go func() {
			// Never unlocked: the timer signals this very thread.
			runtime.LockOSThread()
			tid := unix.Gettid()
			pid := unix.Getpid()
			for fd := range closer.fds {
				t := time.AfterFunc(closeStuck, func() { _ = unix.Tgkill(pid, tid, unix.SIGURG) })
				unix.Close(fd)
				t.Stop()
				closer.held.Add(-1)
			}
		}()
	}
}

// noteCopies counts n descriptors just copied out of a child, each to be
// closed with dropFD.
func noteCopies(n int) {
	closer.once.Do(startCloser)
	closer.held.Add(int64(n))
}

// dropFD closes fd, a copy of a child's descriptor, on a closer's thread.
func dropFD(fd int) {
	if fd < 0 {
		return
	}
	closer.once.Do(startCloser)
	select {
	case closer.fds <- fd:
	default:
		// Cannot happen while callers check backlogged first (no more
		// copies are held than the queue takes); a descriptor left open
		// is the safe side.
	}
}

// backlogged reports whether so many copies are held that no call may
// copy more now.
func backlogged() bool {
	closer.once.Do(startCloser)
	return closer.held.Load() > closer.limit
}
