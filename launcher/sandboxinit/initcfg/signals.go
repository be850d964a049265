package initcfg

import (
	"fmt"
	"os"
	"slices"
	"syscall"
)

// PassedSignals are the signals that, ignored by the launcher's caller,
// are ignored by the command too (Config.Ignored): nohup's SIGHUP, and the
// SIGINT a shell without job control ignores for a background job. They are
// the only ones a Go program can tell were ignored when it started: the Go
// runtime puts its own handler on every other signal, which the exec of the
// next program resets to the default (SIGQUIT's ignoring, the other half of
// a background job's, is lost that way).
var PassedSignals = []syscall.Signal{syscall.SIGHUP, syscall.SIGINT}

// IgnoredBy is Config.Ignored for a process whose ignored signals ignored
// reports (os/signal.Ignored, called before the process changes any).
func IgnoredBy(ignored func(os.Signal) bool) []int {
	var sigs []int
	for _, s := range PassedSignals {
		if ignored(s) {
			sigs = append(sigs, int(s))
		}
	}
	return sigs
}

// CheckIgnored refuses a Config.Ignored that names a signal other than
// PassedSignals, or one twice.
func CheckIgnored(sigs []int) error {
	for i, n := range sigs {
		if !slices.Contains(PassedSignals, syscall.Signal(n)) || slices.Contains(sigs[:i], n) {
			return fmt.Errorf("bad config: the command cannot be told to ignore signal %d", n)
		}
	}
	return nil
}

// Signals is sigs as signals.
func Signals(sigs []int) []os.Signal {
	out := make([]os.Signal, len(sigs))
	for i, n := range sigs {
		out[i] = syscall.Signal(n)
	}
	return out
}
