package initcfg

import (
	"os"
	"slices"
	"syscall"
	"testing"
)

func TestIgnoredBy(t *testing.T) {
	only := func(sigs ...os.Signal) func(os.Signal) bool {
		return func(s os.Signal) bool { return slices.Contains(sigs, s) }
	}
	for _, c := range []struct {
		ignored func(os.Signal) bool
		want    []int
	}{
		{only(), nil},
		{only(syscall.SIGHUP), []int{1}},
		{only(syscall.SIGINT), []int{2}},
		{only(syscall.SIGINT, syscall.SIGHUP), []int{1, 2}},
		// Others are not passed on: the Go runtime cannot tell.
		{only(syscall.SIGQUIT, syscall.SIGPIPE, syscall.SIGTERM), nil},
	} {
		if got := IgnoredBy(c.ignored); !slices.Equal(got, c.want) {
			t.Errorf("IgnoredBy = %v, want %v", got, c.want)
		}
	}
}

func TestCheckIgnored(t *testing.T) {
	for _, ok := range [][]int{nil, {1}, {2}, {1, 2}, {2, 1}} {
		if err := CheckIgnored(ok); err != nil {
			t.Errorf("CheckIgnored(%v): %v", ok, err)
		}
	}
	// SIGKILL, SIGSTOP, a signal a program needs (SIGSEGV), one not
	// passed on (SIGQUIT), none at all, and one twice.
	for _, bad := range [][]int{{9}, {19}, {11}, {3}, {0}, {-1}, {1, 1}, {2, 1, 2}} {
		if err := CheckIgnored(bad); err == nil {
			t.Errorf("CheckIgnored(%v) accepted", bad)
		}
	}
}
