package sandboxinit

import (
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A live process stays alive to pidfdAlive while signals keep arriving
// (pid 1 takes SIGCHLD for every child that ends): an interrupted poll
// is no exit.
func TestPidfdAliveThroughSignals(t *testing.T) {
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Close(pidfd)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	go func() {
		for range sigs {
		}
	}()
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			_ = unix.Kill(os.Getpid(), unix.SIGCHLD)
		}
	}()
	for i := 0; i < 2000000; i++ {
		if !pidfdAlive(pidfd) {
			stop.Store(true)
			<-done
			t.Fatalf("a live process taken for gone after %d checks", i)
		}
	}
	stop.Store(true)
	<-done
}
