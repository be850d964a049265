// Command violationbench measures what observing violations costs a
// file-heavy workload: `rg --files` over a 200,000-file tree and
// `git status` in a repository of the same tree, each run through
// `grok-sandbox run` under one profile with 1,000 masks (a glob matching
// one file in each of 1,000 directories), with the observer on (the
// default) and off (GROK_SANDBOX_OBSERVE=off), interleaved in one run. It
// reports the workload's own time (measured inside the sandbox) and the
// whole run's (launch included: the masks' mounts, the observer's start).
//
//	go build -o /var/tmp/grok-sandbox . && go run ./scripts/violationbench -bin /var/tmp/grok-sandbox -dir /var/tmp/violationbench
//
// Two layouts of the masked files: "ignored" (listed in .gitignore, as
// secrets usually are: git status never stats them, rg --files never
// opens them) and "tracked" (committed, so git status stats every one,
// each a round trip to the mask observer). The tree is made once, outside
// /tmp (which every profile may write).
//
// -before OLD times an earlier build too, observer on, in the same rounds;
// -layout and -workload pick one of each (a substring of its name).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	bin := flag.String("bin", "grok-sandbox", "the grok-sandbox binary")
	dir := flag.String("dir", "/var/tmp/violationbench", "a directory outside /tmp for the trees")
	n := flag.Int("n", 15, "runs of each")
	before := flag.String("before", "", "an earlier grok-sandbox build, timed with the observer on in the same rounds")
	onlyLayout := flag.String("layout", "", "only the layout whose name holds this (ignored, tracked)")
	onlyWork := flag.String("workload", "", "only the workload whose name holds this (rg, git)")
	flag.Parse()
	home := filepath.Join(*dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".grok"), 0o700); err != nil {
		fail("%v", err)
	}
	toml := "[profiles.bench]\ndeny = [\"**/secret.key\"]\n"
	if err := os.WriteFile(filepath.Join(home, ".grok", "sandbox.toml"), []byte(toml), 0o644); err != nil {
		fail("%v", err)
	}
	for _, layout := range []string{"ignored", "tracked"} {
		if !strings.Contains(layout, *onlyLayout) {
			continue
		}
		tree := filepath.Join(*dir, layout)
		if _, err := os.Stat(filepath.Join(tree, ".git")); err != nil {
			if err := generate(tree, layout == "ignored"); err != nil {
				fail("%v", err)
			}
		}
		for _, w := range []struct {
			name string
			argv []string
		}{
			{"rg --files", []string{"rg", "--files", "--hidden", "-g", "!.git"}},
			{"git status", []string{"git", "status", "--porcelain"}},
		} {
			if !strings.Contains(w.name, *onlyWork) {
				continue
			}
			// The workload is timed inside the sandbox too (bash around
			// it): a launch with thousands of pins costs bwrap more than
			// the workload, and varies more.
			timed := append([]string{"bash", "-c", `for i in 1 2 3 4 5; do a=$(date +%s%N); "$@" >/dev/null; b=$(date +%s%N); echo $((b-a)); done`, "bash"}, w.argv...)
			run := func(binary, observe string) (whole time.Duration, inside []time.Duration) {
				cmd := exec.Command(binary, append([]string{"run", "--profile", "bench", "--"}, timed...)...)
				cmd.Dir, cmd.Stderr = tree, os.Stderr
				cmd.Env = append(os.Environ(), "HOME="+home, "GROK_HOME=", "GROK_SANDBOX_OBSERVE="+observe)
				start := time.Now()
				out, err := cmd.Output()
				if err != nil {
					fail("%s (%s): %v: %s", w.name, layout, err, out)
				}
				whole = time.Since(start)
				for _, f := range strings.Fields(string(out)) {
					var ns int64
					if _, err := fmt.Sscan(f, &ns); err != nil {
						fail("%s (%s): no time in %q", w.name, layout, out)
					}
					inside = append(inside, time.Duration(ns))
				}
				return whole, inside
			}
			modes := []string{"on", "off"}
			if *before != "" {
				modes = append(modes, "before")
			}
			start := func(mode string) (time.Duration, []time.Duration) {
				switch mode {
				case "off":
					return run(*bin, "off")
				case "before":
					return run(*before, "")
				}
				return run(*bin, "")
			}
			for _, mode := range modes {
				start(mode)
			}
			whole := map[string][]time.Duration{}
			inside := map[string][]time.Duration{}
			for i := 0; i < *n; i++ {
				// Each round in another order: rotated, and reversed
				// every other round.
				order := append([]string(nil), modes[i%len(modes):]...)
				order = append(order, modes[:i%len(modes)]...)
				if i%2 == 1 {
					for a, b := 0, len(order)-1; a < b; a, b = a+1, b-1 {
						order[a], order[b] = order[b], order[a]
					}
				}
				for _, mode := range order {
					wd, in := start(mode)
					whole[mode], inside[mode] = append(whole[mode], wd), append(inside[mode], in...)
				}
			}
			mon, moff, mi, mo := median(whole["on"]), median(whole["off"]), median(inside["on"]), median(inside["off"])
			fmt.Printf("%-10s %-8s the workload: observer on %7.1f ms, off %7.1f ms, ratio %.3f (medians of %d); the whole run (5 of them): %7.1f vs %7.1f ms, ratio %.3f (medians of %d, interleaved)\n",
				w.name, layout, ms(mi), ms(mo), float64(mi)/float64(mo), len(inside["on"]), ms(mon), ms(moff), float64(mon)/float64(moff), *n)
			if *before != "" {
				mb := median(inside["before"])
				fmt.Printf("%-10s %-8s the earlier build, observer on: %7.1f ms, ratio %.3f to off (this build %.3f)\n",
					w.name, layout, ms(mb), float64(mb)/float64(mo), float64(mi)/float64(mo))
			}
		}
	}
}

// generate makes a git repository of 200,000 files in 10,000 directories,
// with secret.key in every tenth one (1,000 masks), committed or ignored.
func generate(root string, ignored bool) error {
	for d := 0; d < 10000; d++ {
		dir := filepath.Join(root, fmt.Sprintf("p%02d", d%100), fmt.Sprintf("d%04d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		files := 20
		if d%10 == 0 {
			files = 19
			if err := os.WriteFile(filepath.Join(dir, "secret.key"), []byte("KEY\n"), 0o644); err != nil {
				return err
			}
		}
		for f := 0; f < files; f++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", f)), []byte("x\n"), 0o644); err != nil {
				return err
			}
		}
	}
	if ignored {
		if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("secret.key\n"), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "tree"},
		{"status", "--porcelain"}, // writes the index's stat data once
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "violationbench: "+format+"\n", args...)
	os.Exit(1)
}
