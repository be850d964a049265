// Command launchbench measures launch overhead, interleaved in one run so
// that machine noise hits all alike: `grok-sandbox run` against the
// identical argv given straight to bwrap (taken from `grok-sandbox print`,
// with the same descriptors, the init stage included), and against the
// floor: bwrap making the same mounts itself and execing the command
// directly (what bwrap alone costs, without grok-sandbox's checks inside).
// The floor is grok-sandbox's bwrap options with every layer the init stage
// mounts (the staged ones, and the ones it makes read-only in place) bound
// by bwrap at its own path instead, as a hand-written bwrap call would.
//
//	go build -o /tmp/grok-sandbox . && go run ./scripts/launchbench -bin /tmp/grok-sandbox -n 200
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"grok-sandbox/launcher/sandboxinit/initcfg"
)

var binFlag = flag.String("bin", "grok-sandbox", "the grok-sandbox binary")

func main() {
	bin := binFlag
	profile := flag.String("profile", "workspace", "the profile to launch")
	n := flag.Int("n", 200, "launches of each kind")
	before := flag.String("before", "", "another grok-sandbox binary (an earlier build) whose run is timed in the same rounds")
	flag.Parse()
	cmd := []string{"/bin/true"}
	if flag.NArg() > 0 {
		cmd = flag.Args()
	}

	out, err := exec.Command(*bin, append([]string{"print", "--json", "--profile", *profile, "--"}, cmd...)...).Output()
	if err != nil {
		fail("print: %v", err)
	}
	var printed struct {
		Argv []string `json:"argv"`
		FDs  map[string]struct {
			Base64 []byte          `json:"base64"`
			Config json.RawMessage `json:"config"`
		} `json:"descriptors"`
	}
	var initBinds struct {
		Binds []struct {
			Path     string `json:"path"`
			ReadOnly bool   `json:"read_only"`
		} `json:"init_binds"`
	}
	if err := json.Unmarshal(out, &printed); err != nil {
		fail("print --json: %v", err)
	}
	direct := printed.Argv
	direct[0], err = exec.LookPath(direct[0])
	if err != nil {
		fail("%v", err)
	}
	bwrapPath = direct[0]
	// The descriptors grok-sandbox hands to bwrap, at the same numbers.
	for num, d := range printed.FDs {
		n, _ := strconv.Atoi(num)
		// The seccomp program's bytes, or the init config as the init stage
		// reads it (initcfg's binary form; print leaves the environment's
		// values out, which /bin/true ignores); the executable is opened
		// below.
		data := d.Base64
		if d.Config != nil {
			if err := json.Unmarshal(d.Config, &initBinds); err != nil {
				fail("init config: %v", err)
			}
			// In the form the init stage reads.
			var cfg initcfg.Config
			if err := json.Unmarshal(d.Config, &cfg); err != nil {
				fail("init config: %v", err)
			}
			if data, err = initcfg.Encode(&cfg); err != nil {
				fail("init config: %v", err)
			}
		}
		if data == nil {
			continue
		}
		f, err := os.CreateTemp("", "launchbench")
		if err != nil {
			fail("%v", err)
		}
		os.Remove(f.Name())
		f.Write(data)
		fdFiles[n] = f
	}
	// Descriptor 12 is the executable bwrap runs as the init stage.
	self, err := os.Open(*bin)
	if err != nil {
		fail("%v", err)
	}
	fdFiles[12] = self
	// The floor: the same bwrap options, each layer the init stage would
	// mount bound by bwrap at its own path, execing the command instead of
	// the init stage (which follows bwrap's last "--").
	sep := len(direct) - 1
	for direct[sep] != "--" {
		sep--
	}
	var own []string
	for _, b := range initBinds.Binds {
		flag := "--bind"
		if b.ReadOnly {
			flag = "--ro-bind"
		}
		own = append(own, flag, b.Path, b.Path)
	}
	var bare []string
	at := -1
	for i := 0; i < sep; i++ {
		a := direct[i]
		if (a == "--bind" || a == "--ro-bind") && i+2 < sep && strings.HasPrefix(direct[i+2], "/dev/.grok-sandbox-stage/") {
			if at < 0 {
				at = len(bare)
			}
			i += 2
			continue
		}
		if at < 0 && (a == "--remount-ro" && direct[i+1] == "/" || a == "--chdir" || a == "--seccomp") {
			at = len(bare)
		}
		bare = append(bare, a)
	}
	bare = append(append(bare[:at:at], own...), bare[at:]...)
	bare = append(append(bare, "--"), cmd...)
	viaLauncher := append([]string{*bin, "run", "--profile", *profile, "--"}, cmd...)

	var tl, tb, tr, to []time.Duration
	for i := 0; i < *n; i++ {
		// Rotate which goes first, so none always runs warm.
		runs := []func(){
			func() { tl = append(tl, timeRun(viaLauncher)) },
			func() { tb = append(tb, timeRun(direct)) },
			func() { tr = append(tr, timeRun(bare)) },
		}
		if *before != "" {
			old := append([]string{*before}, viaLauncher[1:]...)
			runs = append(runs, func() { to = append(to, timeRun(old)) })
		}
		for j := range runs {
			runs[(i+j)%len(runs)]()
		}
	}
	ml, mb, mr := median(tl), median(tb), median(tr)
	fmt.Printf("profile %s, %d launches each, command %v\n", *profile, *n, cmd)
	fmt.Printf("bwrap, same mounts, command directly: median %v  p90 %v\n", mr, pct(tr, 0.9))
	fmt.Printf("bwrap with init stage:              median %v  p90 %v\n", mb, pct(tb, 0.9))
	fmt.Printf("grok-sandbox run:                   median %v  p90 %v\n", ml, pct(tl, 0.9))
	fmt.Printf("ratio run / bwrap+init:   %.3f\n", float64(ml)/float64(mb))
	fmt.Printf("ratio run / bwrap alone:  %.3f\n", float64(ml)/float64(mr))
	if *before != "" {
		mo := median(to)
		fmt.Printf("%s run:  median %v  p90 %v  ratio to bwrap alone %.3f\n", *before, mo, pct(to, 0.9), float64(mo)/float64(mr))
	}
	if os.Getenv("LAUNCHBENCH_SHOW") != "" {
		fmt.Println(strings.Join(bare, " "))
	}
}

// fdFiles are files to pass to the direct bwrap (bwrapPath) at fixed
// descriptor numbers.
var (
	fdFiles   = map[int]*os.File{}
	bwrapPath string
)

func timeRun(argv []string) time.Duration {
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout, c.Stderr = nil, os.Stderr
	if argv[0] == bwrapPath {
		for n, f := range fdFiles {
			f.Seek(0, 0)
			for len(c.ExtraFiles) < n-2 {
				c.ExtraFiles = append(c.ExtraFiles, nil)
			}
			c.ExtraFiles[n-3] = f
		}
	}
	start := time.Now()
	if err := c.Run(); err != nil {
		fail("%v: %v", argv, err)
	}
	return time.Since(start)
}

func median(d []time.Duration) time.Duration { return pct(d, 0.5) }

func pct(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "launchbench: "+format+"\n", args...)
	os.Exit(1)
}
