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
// answers the wrapped command's calls too. One thread closes them in turn;
// a close that takes longer than closeStuck is interrupted with a signal
// the Go runtime takes in its stride (SIGURG, its own preemption signal),
// which ends the kernel's wait (the socket is then closed in the
// background, as one without SO_LINGER). While too many wait, the calls
// that would copy more fail with EAGAIN (backlogged).

const (
	closeQueue = 1 << 16
	closeStuck = 200 * time.Millisecond
)

var closer struct {
	once  sync.Once
	fds   chan int
	tid   atomic.Int32
	since atomic.Int64 // when the close in progress began (UnixNano), 0: none
}

func startCloser() {
	closer.fds = make(chan int, closeQueue)
	ready := make(chan struct{})
	go func() {
		// Never unlocked: the watchdog signals this very thread.
		runtime.LockOSThread()
		closer.tid.Store(int32(unix.Gettid()))
		close(ready)
		for fd := range closer.fds {
			closer.since.Store(time.Now().UnixNano())
			unix.Close(fd)
			closer.since.Store(0)
		}
	}()
	<-ready
	go func() {
		for range time.Tick(closeStuck / 2) {
			if t := closer.since.Load(); t != 0 && time.Since(time.Unix(0, t)) > closeStuck {
				_ = unix.Tgkill(unix.Getpid(), int(closer.tid.Load()), unix.SIGURG)
			}
		}
	}()
}

// dropFD closes fd, a copy of a child's descriptor, on the closer's
// thread.
func dropFD(fd int) {
	if fd < 0 {
		return
	}
	closer.once.Do(startCloser)
	select {
	case closer.fds <- fd:
	default:
		// Cannot happen while callers check backlogged first (no call
		// copies more than a message's 253 descriptors and its socket);
		// a descriptor left open is the safe side.
	}
}

// backlogged reports whether so many copies wait to be closed that no call
// may copy more now.
func backlogged() bool {
	closer.once.Do(startCloser)
	return len(closer.fds) > closeQueue/2
}
