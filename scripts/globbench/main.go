// Command globbench compares deny-glob expansion with ripgrep's walker on
// the same large tree, interleaved in one run:
//
//	go run ./scripts/globbench -tree /var/tmp/globbench -n 15
//
// It generates the tree (about 200,000 files in 10,000 directories, with a
// few hundred .env and .pem files among them) when it does not exist, then
// times globexpand.Expand of ["**/.env", "**/*.pem"] against
// `rg --files --hidden --no-ignore -g .env -g '*.pem'`, and checks both find
// the same files.
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

	"grok-sandbox/globexpand"
)

func main() {
	tree := flag.String("tree", "/var/tmp/globbench", "the tree to walk (generated when missing)")
	n := flag.Int("n", 15, "runs of each")
	flag.Parse()
	if _, err := os.Stat(*tree); err != nil {
		if err := generate(*tree); err != nil {
			fail("%v", err)
		}
	}
	root, _ := filepath.EvalSymlinks(*tree)
	var pats []globexpand.Pattern
	for _, e := range []string{"**/.env", "**/*.pem"} {
		p, err := globexpand.Parse(e, root, "/nonexistent")
		if err != nil {
			fail("%v", err)
		}
		pats = append(pats, p)
	}
	lim := globexpand.Limits{MaxMatches: 100000, MaxDepth: 64, MaxVisited: 10000000}
	expand := func() []string {
		m, _, err := globexpand.Expand(pats, lim)
		if err != nil {
			fail("%v", err)
		}
		var out []string
		for _, x := range m {
			out = append(out, x.Path)
		}
		return out
	}
	rg := func() []string {
		cmd := exec.Command("rg", "--files", "--hidden", "--no-ignore", "-g", ".env", "-g", "*.pem", root)
		out, err := cmd.Output()
		if err != nil {
			fail("rg: %v", err)
		}
		return strings.Fields(string(out))
	}
	a, b := expand(), rg()
	sort.Strings(a)
	sort.Strings(b)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		fail("globexpand found %d paths, rg %d: they differ", len(a), len(b))
	}
	var te, tr []time.Duration
	for i := 0; i < *n; i++ {
		for j, f := range []func() []string{expand, rg} {
			if i%2 == 1 {
				j = 1 - j
				f = []func() []string{expand, rg}[j]
			}
			start := time.Now()
			f()
			d := time.Since(start)
			if j == 0 {
				te = append(te, d)
			} else {
				tr = append(tr, d)
			}
		}
	}
	me, mr := median(te), median(tr)
	fmt.Printf("tree %s: %d matches\n", root, len(a))
	fmt.Printf("globexpand.Expand: median %v\n", me)
	fmt.Printf("rg --files:        median %v\n", mr)
	fmt.Printf("ratio:             %.2f\n", float64(me)/float64(mr))
}

func generate(root string) error {
	for d := 0; d < 10000; d++ {
		dir := filepath.Join(root, fmt.Sprintf("p%02d", d%100), fmt.Sprintf("d%04d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for f := 0; f < 20; f++ {
			name := fmt.Sprintf("f%02d.txt", f)
			switch {
			case f == 0 && d%37 == 0:
				name = ".env"
			case f == 1 && d%53 == 0:
				name = "key.pem"
			}
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "globbench: "+format+"\n", args...)
	os.Exit(1)
}
