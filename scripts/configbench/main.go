// Command configbench measures what the number of custom profiles costs a
// launch: `grok-sandbox print --profile strict` with sandbox.toml files of
// 0 to 10,000 profiles (each a table with extends, a list over two lines
// and a deny entry: 10,000 of them stay under the 1 MiB limit), so that the
// growth is visible next to the baseline. Loading must stay linear in the
// size of the file.
//
//	go build -o /tmp/grok-sandbox . && go run ./scripts/configbench -bin /tmp/grok-sandbox
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
	n := flag.Int("n", 20, "launches of each size")
	sizes := flag.String("profiles", "0,1000,2000,4000,10000", "numbers of profiles, comma-separated")
	flag.Parse()

	root, err := os.MkdirTemp("", "configbench")
	if err != nil {
		fail("%v", err)
	}
	defer os.RemoveAll(root)
	home, ws := filepath.Join(root, "home"), filepath.Join(root, "ws")
	for _, d := range []string{filepath.Join(home, ".grok"), ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			fail("%v", err)
		}
	}
	env := append(os.Environ(), "HOME="+home, "GROK_HOME=")

	fmt.Printf("grok-sandbox print --profile strict, %d launches each\n", *n)
	fmt.Printf("%9s %12s %10s %10s\n", "profiles", "file", "median", "p90")
	for _, s := range strings.Split(*sizes, ",") {
		var count int
		if _, err := fmt.Sscan(s, &count); err != nil {
			fail("-profiles: %v", err)
		}
		file := filepath.Join(home, ".grok", "sandbox.toml")
		data := profiles(count)
		if err := os.WriteFile(file, data, 0o644); err != nil {
			fail("%v", err)
		}
		var t []time.Duration
		for i := 0; i < *n; i++ {
			c := exec.Command(*bin, "print", "--profile", "strict", "--workspace", ws, "--", "/bin/true")
			c.Env = env
			c.Stderr = os.Stderr
			start := time.Now()
			if err := c.Run(); err != nil {
				fail("%d profiles: %v", count, err)
			}
			t = append(t, time.Since(start))
		}
		fmt.Printf("%9d %10d B %10v %10v\n", count, len(data), pct(t, 0.5).Round(10*time.Microsecond), pct(t, 0.9).Round(10*time.Microsecond))
	}
}

// profiles is a sandbox.toml of count profiles written the way people write
// them.
func profiles(count int) []byte {
	var b strings.Builder
	for i := 0; i < count; i++ {
		fmt.Fprintf(&b, "[profiles.p%d]\nextends = \"strict\"\nread_only = [\n  \"~/p%d\"]\ndeny = [\".env\"]\n", i, i)
	}
	return []byte(b.String())
}

func pct(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "configbench: "+format+"\n", args...)
	os.Exit(1)
}
