// Command childnetbench measures what the children's private loopback
// costs: a child of the wrapped command makes N loopback connect/accept
// round trips (one byte each way, a fresh connection each) under strict,
// against the same program run unsandboxed, interleaved so that machine
// noise hits both alike. The child is this program itself, run as
// "childnetbench roundtrips N" by sh (so it is a child, not the command).
//
//	go build -o /tmp/grok-sandbox . && go build -o /var/tmp/childnetbench ./scripts/childnetbench
//	cd SOME-WORKSPACE && /var/tmp/childnetbench -bin /tmp/grok-sandbox -rounds 10 -n 1000
//
// The benchmark binary must be somewhere strict exposes (not your home:
// /var/tmp, /usr/local/bin, the workspace).
//
// With -download MB it also measures a download of MB megabytes by curl,
// from a server of its own on 127.0.0.2: by a child through the allow-list
// proxy (a profile extending strict with allow_hosts naming the server,
// written to a GROK_HOME of its own under -home) against curl unsandboxed,
// and against curl unsandboxed through a plain TCP relay on 127.0.0.3 (the
// floor any proxy sits on: a second loopback hop, relayed in the kernel by
// Go's io.Copy, which splices). With -rate MBps the server paces what it
// sends, as a network link would (125 for one gigabit per second).
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "roundtrips" {
		n, _ := strconv.Atoi(os.Args[2])
		d, err := roundTrips(n)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(d.Nanoseconds())
		return
	}
	bin := flag.String("bin", "grok-sandbox", "the grok-sandbox binary")
	profile := flag.String("profile", "strict", "the profile")
	n := flag.Int("n", 1000, "round trips per run")
	rounds := flag.Int("rounds", 10, "runs of each kind, interleaved")
	download := flag.Int("download", 0, "also time a download of this many MB through the allow-list proxy (0: no)")
	rate := flag.Int("rate", 0, "with -download, the server's pace in MB/s (0: as fast as it can)")
	home := flag.String("home", "/var/tmp/childnetbench-home", "GROK_HOME's parent for the download profile (not the workspace or above it)")
	flag.Parse()
	if *download > 0 {
		downloadBench(*bin, *home, *download, *rounds, *rate)
	}
	self, err := os.Executable()
	if err != nil {
		fail("%v", err)
	}
	child := fmt.Sprintf("%s roundtrips %d; exit $?", self, *n)
	var inside, outside []time.Duration
	for i := 0; i < *rounds; i++ {
		inside = append(inside, run(*bin, "run", "--profile", *profile, "--", "sh", "-c", child))
		outside = append(outside, run("sh", "-c", child))
	}
	mi, mo := median(inside), median(outside)
	fmt.Printf("%d loopback round trips by a child, median of %d runs:\n", *n, *rounds)
	fmt.Printf("  unsandboxed:        %v (%v each)\n", mo, mo/time.Duration(*n))
	fmt.Printf("  under %-12s  %v (%v each)\n", *profile+":", mi, mi/time.Duration(*n))
	fmt.Printf("  ratio:              %.2fx\n", float64(mi)/float64(mo))
}

// run runs the child and returns the time it reports for its loop (the
// sandbox's start-up is not counted).
func run(name string, args ...string) time.Duration {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		fail("%s %s: %v", name, strings.Join(args, " "), err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		fail("unexpected output %q", out)
	}
	return time.Duration(ns)
}

func roundTrips(n int) (time.Duration, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 1)
			if _, err := c.Read(b); err == nil {
				c.Write(b)
			}
			c.Close()
		}
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			return 0, err
		}
		b := []byte{1}
		if _, err := c.Write(b); err != nil {
			return 0, err
		}
		if _, err := c.Read(b); err != nil {
			return 0, err
		}
		c.Close()
	}
	return time.Since(start), nil
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "childnetbench: "+format+"\n", a...)
	os.Exit(1)
}

// downloadBench serves mb megabytes on 127.0.0.2 and times curl fetching
// them: by a child through the proxy, and unsandboxed.
func downloadBench(bin, home string, mb, rounds, rate int) {
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		fail("%v", err)
	}
	chunk := make([]byte, 1<<20)
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(mb<<20))
		start := time.Now()
		for i := 0; i < mb; i++ {
			if rate > 0 {
				// Pace: chunk i leaves no earlier than i/rate seconds in.
				time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	addr := l.Addr().String()
	relayAddr := relay(addr)
	if err := os.MkdirAll(filepath.Join(home, ".grok"), 0o755); err != nil {
		fail("%v", err)
	}
	conf := fmt.Sprintf("[profiles.benchdl]\nextends = \"strict\"\nallow_hosts = [%q]\n", addr)
	if err := os.WriteFile(filepath.Join(home, ".grok", "sandbox.toml"), []byte(conf), 0o644); err != nil {
		fail("%v", err)
	}
	fetch := fmt.Sprintf("curl -fsS -o /dev/null -w '%%{time_total}' http://%s/; exit $?", addr)
	timeCurl := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		cmd.Stderr = io.Discard
		out, err := cmd.Output()
		if err != nil {
			fail("%s %s: %v", name, strings.Join(args, " "), err)
		}
		secs, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if err != nil {
			fail("unexpected output %q", out)
		}
		return time.Duration(secs * float64(time.Second))
	}
	fetchRelay := fmt.Sprintf("curl -fsS -o /dev/null -w '%%{time_total}' http://%s/; exit $?", relayAddr)
	var via, direct, relayed []time.Duration
	for i := 0; i < rounds; i++ {
		via = append(via, timeCurl(bin, "run", "--profile", "benchdl", "--", "sh", "-c", fetch))
		direct = append(direct, timeCurl("sh", "-c", "env -u http_proxy -u HTTP_PROXY "+fetch))
		relayed = append(relayed, timeCurl("sh", "-c", "env -u http_proxy -u HTTP_PROXY "+fetchRelay))
	}
	mv, md, mr := median(via), median(direct), median(relayed)
	pace := "as fast as the server writes"
	if rate > 0 {
		pace = fmt.Sprintf("paced at %d MB/s", rate)
	}
	fmt.Printf("%d MB by curl from 127.0.0.2 (%s), median of %d runs:\n", mb, pace, rounds)
	fmt.Printf("  direct, unsandboxed:              %v (%.0f MB/s)\n", md, float64(mb)/md.Seconds())
	fmt.Printf("  through a plain relay, unsandboxed: %v (%.0f MB/s)\n", mr, float64(mb)/mr.Seconds())
	fmt.Printf("  a child through the allow-list:   %v (%.0f MB/s)\n", mv, float64(mb)/mv.Seconds())
	fmt.Printf("  throughput, allow-list / direct:  %.2fx\n", float64(md)/float64(mv))
	fmt.Printf("  throughput, relay / direct:       %.2fx (the floor of a second hop)\n", float64(md)/float64(mr))
	fmt.Printf("  throughput, allow-list / relay:   %.2fx\n", float64(mr)/float64(mv))
}

// relay listens on 127.0.0.3 and relays each connection to target with
// io.Copy (splice between TCP sockets), returning its address.
func relay(target string) string {
	l, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		fail("%v", err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go func() {
					io.Copy(u, c)
					u.(*net.TCPConn).CloseWrite()
				}()
				io.Copy(c, u)
			}()
		}
	}()
	return l.Addr().String()
}
