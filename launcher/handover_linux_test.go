package launcher

import (
	"fmt"
	"grok-sandbox/launcher/sandboxinit/initcfg"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"grok-sandbox/argv"
)

// Around and past maxDirectArgs the options move to --args, and the init
// stage always stays after the "--" on the real argv: bwrap stops reading
// --args data at a "--", so a command there would be dropped (and bwrap
// would exec whatever followed).
func TestViaArgsFDKeepsTheInitStageOnTheArgv(t *testing.T) {
	init := []string{"/proc/self/fd/12", initcfg.Command, "11"}
	for _, n := range []int{0, 10, maxDirectArgs, maxDirectArgs + 1, 445, 3000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			l := argv.Launch{Bwrap: "bwrap", Command: init}
			for i := 0; i < n; i++ {
				l.Options = append(l.Options, fmt.Sprintf("/opt%d", i))
			}
			got, err := viaArgsFD(l)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkBoundary(got, init); err != nil {
				t.Fatal(err)
			}
			if n <= maxDirectArgs {
				if !slices.Equal(got, l.Argv()) {
					t.Fatalf("argv %q", got)
				}
				return
			}
			if len(got) != 4+len(init) || got[1] != "--args" || got[3] != "--" {
				t.Fatalf("argv %q", got)
			}
			fd, _ := strconv.Atoi(got[2])
			f := os.NewFile(uintptr(fd), "args")
			defer f.Close()
			data, err := io.ReadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.Join(l.Options, "\x00") + "\x00"; string(data) != want {
				t.Fatalf("--args holds %d bytes, want %d", len(data), len(want))
			}
			if strings.Contains(string(data), initcfg.Command) {
				t.Fatalf("the init stage went into --args")
			}
		})
	}
}

// checkBoundary refuses what the old index arithmetic produced: an argv
// whose command is not the init stage, or a "--" among bwrap's options.
func TestCheckBoundaryRefuses(t *testing.T) {
	init := []string{"/proc/self/fd/12", initcfg.Command, "11"}
	for name, a := range map[string][]string{
		"command instead of init": {"bwrap", "--ro-bind", "/", "/", "--", "sh", "-c", "x"},
		"init inside options":     {"bwrap", "--args", "3", "--", "true"},
		"dash dash option":        append([]string{"bwrap", "--", "--"}, init...),
		"too short":               {"bwrap"},
	} {
		if err := checkBoundary(a, init); err == nil {
			t.Errorf("%s: %q accepted", name, a)
		}
	}
	if err := checkBoundary(append([]string{"bwrap", "--ro-bind", "/", "/", "--"}, init...), init); err != nil {
		t.Errorf("a good argv refused: %v", err)
	}
}

// A launch past bubblewrap's own argument limit is refused, not cut.
func TestViaArgsFDRefusesPastBwrapLimit(t *testing.T) {
	l := argv.Launch{Bwrap: "bwrap", Command: []string{"x"}, Options: make([]string, bwrapArgMax)}
	if _, err := viaArgsFD(l); err == nil {
		t.Fatal("accepted")
	}
}
