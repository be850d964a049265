// Command maskbench measures how launch time grows with the number of deny
// masks: `grok-sandbox run` of /bin/true under profiles that mask 0, 100,
// 1,000 and 5,000 files, interleaved in one run.
//
//	go build -o /tmp/grok-sandbox . && go run ./scripts/maskbench -bin /tmp/grok-sandbox -dir /var/tmp/maskbench
//
// Every mask is mounted by grok-sandbox's init stage (by descriptor, onto
// the file resolution found); bwrap mounts none.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"
)

func main() {
	bin := flag.String("bin", "grok-sandbox", "the grok-sandbox binary")
	dir := flag.String("dir", "/var/tmp/maskbench", "a directory outside /tmp to build the workspace in")
	n := flag.Int("n", 30, "launches of each size")
	flag.Parse()
	sizes := []int{0, 100, 1000, 5000}
	ws, home := filepath.Join(*dir, "ws"), filepath.Join(*dir, "home")
	toml := ""
	for _, size := range sizes {
		sub := filepath.Join(ws, fmt.Sprintf("m%d", size))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			fail("%v", err)
		}
		for i := 0; i < size; i++ {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d.key", i)), nil, 0o644); err != nil {
				fail("%v", err)
			}
		}
		toml += fmt.Sprintf("[profiles.m%d]\ndeny = [\"m%d/*.key\"]\n", size, size)
	}
	if err := os.MkdirAll(filepath.Join(home, ".grok"), 0o700); err != nil {
		fail("%v", err)
	}
	if err := os.WriteFile(filepath.Join(home, ".grok", "sandbox.toml"), []byte(toml), 0o644); err != nil {
		fail("%v", err)
	}
	times := map[int][]time.Duration{}
	for i := 0; i < *n; i++ {
		for k := range sizes {
			size := sizes[(k+i)%len(sizes)]
			cmd := exec.Command(*bin, "run", "--profile", fmt.Sprintf("m%d", size), "--", "/bin/true")
			cmd.Dir, cmd.Stderr = ws, os.Stderr
			cmd.Env = append(os.Environ(), "HOME="+home, "GROK_HOME=")
			start := time.Now()
			if err := cmd.Run(); err != nil {
				fail("%d masks: %v", size, err)
			}
			times[size] = append(times[size], time.Since(start))
		}
	}
	for _, size := range sizes {
		d := times[size]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		fmt.Printf("%5d masks: median %v\n", size, d[len(d)/2])
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "maskbench: "+format+"\n", args...)
	os.Exit(1)
}
