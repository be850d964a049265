package verbs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"grok-sandbox/launcher/eventlog"
	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/resolve"
)

// LogOptions are `grok-sandbox log`'s flags.
type LogOptions struct {
	N          int  // the last N events (0: 50)
	All        bool // every event
	Violations bool // violations (and their summaries) only
	Profile    string
	Command    string
	Since      string // a duration (10m) or a time
	JSON       bool
	Follow     bool
	Summary    bool
	Suggest    bool
	// Stop ends --follow (nil: never; tests close it).
	Stop <-chan struct{}
}

// GrokHome is GROK_HOME as the launcher finds it (the variable, else
// ~/.grok), every link resolved where it exists.
func GrokHome() (string, error) {
	gh := os.Getenv("GROK_HOME")
	if gh == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", resolve.Refuse("cannot find your home directory: %v", err)
		}
		gh = filepath.Join(home, ".grok")
	}
	if !filepath.IsAbs(gh) {
		return "", resolve.Refuse("GROK_HOME=%s is not an absolute path", printable.String(gh))
	}
	if c, err := filepath.EvalSymlinks(gh); err == nil {
		gh = c
	}
	return gh, nil
}

// Log prints the event log: one aligned line an event, oldest first.
func Log(o LogOptions, w io.Writer) error {
	gh, err := GrokHome()
	if err != nil {
		return err
	}
	var since time.Time
	if o.Since != "" {
		if since, err = parseSince(o.Since, time.Now()); err != nil {
			return resolve.Refuse("--since %s: %v", printable.String(o.Since), err)
		}
	}
	recs, err := eventlog.ReadAll(gh)
	if err != nil {
		return resolve.Refuse("%v", err)
	}
	keep := func(r eventlog.Record) bool {
		if r.Bad != "" {
			return !o.JSON && o.Profile == "" && o.Command == "" && !o.Violations && since.IsZero()
		}
		ev := r.Event
		if o.Violations && ev.Event != "violation" && ev.Event != "violation_summary" {
			return false
		}
		if o.Profile != "" && ev.Profile != o.Profile {
			return false
		}
		if o.Command != "" && ev.Command != o.Command && filepath.Base(ev.Exe) != o.Command {
			return false
		}
		if !since.IsZero() {
			t, err := time.Parse(time.RFC3339Nano, ev.Time)
			if err != nil || t.Before(since) {
				return false
			}
		}
		return true
	}
	var sel []eventlog.Record
	for _, r := range recs {
		if keep(r) {
			sel = append(sel, r)
		}
	}
	switch {
	case o.Summary:
		return writeSummary(w, sel)
	case o.Suggest:
		return writeSuggestions(w, sel)
	}
	if !o.All {
		n := o.N
		if n <= 0 {
			n = 50
		}
		if len(sel) > n {
			sel = sel[len(sel)-n:]
		}
	}
	color := colorOn(w)
	for _, r := range sel {
		writeRecord(w, r, o.JSON, color)
	}
	if !o.Follow {
		return nil
	}
	return follow(gh, w, keep, o.JSON, color, o.Stop)
}

// parseSince reads a duration before now ("10m", "2h") or a time (RFC
// 3339, "2006-01-02 15:04[:05]" or "2006-01-02", local time).
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, errors.New("a duration counts back from now: give it without a sign")
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a duration (10m, 2h) or a time (2006-01-02 15:04)")
}

// colorOn: colour only on a terminal, and never with NO_COLOR set.
func colorOn(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	f, ok := w.(*os.File)
	return ok && isTerminal(int(f.Fd()))
}

// program is what an event names as its program: the executable the
// kernel named when there is one (a process sets its own name).
func program(ev eventlog.Event) string {
	switch {
	case ev.Exe != "":
		return filepath.Base(ev.Exe)
	case ev.Command != "":
		return ev.Command
	}
	return "-"
}

// what is the event's subject: the path and operation, the address, or
// the message.
func what(ev eventlog.Event) string {
	switch {
	case ev.Path != "":
		return ev.Op + " " + ev.Path
	case ev.Address != "":
		return ev.Op + " " + ev.Address
	case ev.Message == "" && ev.Workspace != "":
		return "backend " + ev.Backend + ", workspace " + ev.Workspace
	}
	return ev.Message
}

func writeRecord(w io.Writer, r eventlog.Record, asJSON, color bool) {
	if asJSON {
		fmt.Fprintln(w, r.Raw)
		return
	}
	if r.Bad != "" {
		fmt.Fprintf(w, "%-19s  (unreadable line skipped: %s)\n", "-", r.Bad)
		return
	}
	ev := r.Event
	when := ev.Time
	if t, err := time.Parse(time.RFC3339Nano, ev.Time); err == nil {
		when = t.Local().Format("2006-01-02 15:04:05")
	}
	kind := printable.String(ev.Event)
	plain := kind
	if color {
		switch ev.Event {
		case "violation", "refused":
			kind = "\x1b[31m" + kind + "\x1b[0m" + strings.Repeat(" ", max(0, 9-len(ev.Event)))
		case "degraded", "disabled", "unenforced", "violation_summary":
			kind = "\x1b[33m" + kind + "\x1b[0m" + strings.Repeat(" ", max(0, 9-len(ev.Event)))
		}
	}
	if !color || kind == plain {
		kind = fmt.Sprintf("%-9s", plain)
	}
	fmt.Fprintf(w, "%-19s  %-12s %s  %-12s %s\n", printable.String(when), printable.String(ev.Profile), kind,
		printable.String(program(ev)), printable.String(what(ev)))
}

// follow prints what is appended to the log until stop, across rotations
// (in place: the log's contents move to .1 and the log is emptied; what
// was not read yet is read from .1).
func follow(gh string, w io.Writer, keep func(eventlog.Record) bool, asJSON, color bool, stop <-chan struct{}) error {
	paths := eventlog.Paths(gh)
	rotated, current := paths[0], paths[1]
	// The rotated file changes only at a rotation: its size and time say
	// one happened since the last look (the log itself keeps its inode,
	// and may be longer again by then).
	type stamp struct {
		size int64
		mod  time.Time
	}
	stat := func(path string) stamp {
		f, err := eventlog.OpenRead(path)
		if err != nil || f == nil {
			return stamp{}
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return stamp{}
		}
		return stamp{fi.Size(), fi.ModTime()}
	}
	size := func(path string) int64 { return stat(path).size }
	lastRotated := stat(rotated)
	readFrom := func(path string, off int64) ([]byte, int64) {
		f, err := eventlog.OpenRead(path)
		if err != nil || f == nil {
			return nil, off
		}
		defer f.Close()
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, off
		}
		b, _ := io.ReadAll(io.LimitReader(f, 4*eventlog.Max))
		return b, off + int64(len(b))
	}
	off := size(current)
	var pending []byte
	emit := func(data []byte, final bool) {
		recs, rest := eventlog.ParseLines(append(pending, data...), final)
		pending = rest
		for _, r := range recs {
			if keep(r) {
				writeRecord(w, r, asJSON, color)
			}
		}
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		if r := stat(rotated); r != lastRotated {
			// Rotated: the lines after off went to .1, and the log
			// started again from nothing.
			lastRotated = r
			data, _ := readFrom(rotated, off)
			emit(data, true)
			off = 0
		}
		n := size(current)
		if n < off {
			off = 0 // emptied some other way
		}
		if n > off {
			data, next := readFrom(current, off)
			if stat(rotated) != lastRotated {
				continue // rotated meanwhile: read it all again from .1
			}
			off = next
			emit(data, false)
		}
	}
}

// writeSummary counts the selected events by profile, program and
// operation, and names the paths and addresses most often refused.
func writeSummary(w io.Writer, recs []eventlog.Record) error {
	type count map[string]int
	byProfile, byProgram, byOp, targets := count{}, count{}, count{}, count{}
	events, violations, bad := 0, 0, 0
	for _, r := range recs {
		if r.Bad != "" {
			bad++
			continue
		}
		events++
		ev := r.Event
		if ev.Event != "violation" {
			continue
		}
		violations++
		byProfile[ev.Profile]++
		byProgram[program(ev)]++
		if ev.Op != "" {
			byOp[ev.Op]++
		}
		switch {
		case ev.Path != "":
			targets[ev.Path]++
		case ev.Address != "":
			targets[ev.Address]++
		}
	}
	fmt.Fprintf(w, "%d events, %d violations", events, violations)
	if bad > 0 {
		fmt.Fprintf(w, ", %d unreadable lines skipped", bad)
	}
	fmt.Fprintln(w)
	section := func(title string, c count, limit int) {
		if len(c) == 0 {
			return
		}
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if c[keys[i]] != c[keys[j]] {
				return c[keys[i]] > c[keys[j]]
			}
			return keys[i] < keys[j]
		})
		if limit > 0 && len(keys) > limit {
			keys = keys[:limit]
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, k := range keys {
			fmt.Fprintf(w, "  %6d  %s\n", c[k], printable.String(k))
		}
	}
	section("violations by profile", byProfile, 0)
	section("violations by program", byProgram, 0)
	section("violations by operation", byOp, 0)
	section("most often refused", targets, 10)
	return nil
}

// writeSuggestions prints the TOML that would let the refused attempts of
// the selected events through: allow_hosts entries for refused network
// destinations. It never suggests a denied or protected path, and says so.
func writeSuggestions(w io.Writer, recs []eventlog.Record) error {
	hosts := map[string]int{}
	var order []string
	denied, protected, other := 0, 0, 0
	for _, r := range recs {
		ev := r.Event
		if r.Bad != "" || ev.Event != "violation" {
			continue
		}
		switch {
		case ev.Address != "" && !strings.HasPrefix(ev.Address, "unix:") && (ev.Family == "inet" || ev.Family == "inet6"):
			host, port, ok := splitAddress(ev.Address)
			if !ok {
				other++
				continue
			}
			entry := host
			if port != 80 && port != 443 {
				entry = host + ":" + strconv.Itoa(port)
			}
			if hosts[entry] == 0 {
				order = append(order, entry)
			}
			hosts[entry]++
		case strings.Contains(ev.Message, "protected path"):
			protected++
		case ev.Path != "":
			denied++
		default:
			other++
		}
	}
	if len(order) == 0 {
		fmt.Fprintln(w, "# nothing to suggest: no refused network destination in the selected events")
	} else {
		fmt.Fprintln(w, "# for a custom profile with restrict_network = true (see `grok-sandbox help network`):")
		fmt.Fprintln(w, "allow_hosts = [")
		for _, e := range order {
			note := ""
			if h, _, _ := splitAddress(e + ":1"); isLoopbackHost(h) || isLoopbackHost(e) {
				note = " (the host's loopback: a service of yours on this machine)"
			}
			fmt.Fprintf(w, "  %q, # refused %d time%s%s\n", e, hosts[e], plural(hosts[e]), note)
		}
		fmt.Fprintln(w, "]")
	}
	if denied > 0 {
		fmt.Fprintf(w, "# left out: %d touch%s of denied paths (a deny entry is yours to remove, never suggested)\n", denied, pluralES(denied))
	}
	if protected > 0 {
		fmt.Fprintf(w, "# left out: %d write%s to protected paths (hooks, GROK_HOME's control files: never made writable)\n", protected, plural(protected))
	}
	if other > 0 {
		fmt.Fprintf(w, "# left out: %d other refusal%s (Unix sockets, calls without an address): no allow_hosts entry lets them through\n", other, plural(other))
	}
	fmt.Fprintln(w, "# writes refused on read-only paths and paths strict hides are not logged, so they cannot be suggested")
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralES(n int) string {
	if n == 1 {
		return ""
	}
	return "es"
}

// splitAddress splits host:port or [v6]:port.
func splitAddress(a string) (string, int, bool) {
	i := strings.LastIndexByte(a, ':')
	if i <= 0 {
		return "", 0, false
	}
	port, err := strconv.Atoi(a[i+1:])
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, false
	}
	host := a[:i]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
		return "[" + host + "]", port, true
	}
	return host, port, true
}

func isLoopbackHost(h string) bool {
	h = strings.Trim(strings.ToLower(h), "[]")
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "::1"
}
