// Package verbs is grok-sandbox's verbs for people and tools: what print,
// explain, profiles, check, doctor and status write. It decides nothing: the
// launcher resolves, and cli says what was resolved.
package verbs

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"grok-sandbox/launcher"
	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/envpolicy"
	"grok-sandbox/launcher/landlock"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/resolve"
	"grok-sandbox/launcher/sandboxinit/initcfg"
	"grok-sandbox/sbpl"
)

func checkTarget(t string) error {
	if t != "linux" && t != "darwin" {
		return resolve.Refuse("--target %q: use linux or darwin", t)
	}
	return nil
}

// Print writes what run would exec, one argument per line (or as JSON),
// without running anything.
func Print(inv launcher.Invocation, asJSON bool, w io.Writer) error {
	// A read-only verb: nothing is created on the host.
	inv.DryRun = true
	if err := checkTarget(inv.Target); err != nil {
		return err
	}
	if len(inv.Command) == 0 {
		return resolve.Refuse("no command given; usage: grok-sandbox print [--profile NAME] -- COMMAND [ARG...]")
	}
	plan, err := launcher.Prepare(inv)
	if err != nil {
		return err
	}
	launcher.Warn(inv.Stderr, plan)
	// `print strict -- ls`: a profile's name taken for the command.
	if first := inv.Command[0]; config.IsBuiltin(first) || plan.Config.Profiles[first].Name != "" {
		if _, err := exec.LookPath(first); err != nil {
			fmt.Fprintf(inv.Stderr, "grok-sandbox: warning: %s is a profile's name and no program on PATH: did you mean --profile %s?\n", printable.String(first), printable.String(first))
		}
	}
	if err := plan.Render(inv.Command, ""); err != nil {
		return err
	}
	if asJSON {
		doc := map[string]any{
			"schema_version": launcher.SchemaVersion,
			"profile":        plan.Policy.Profile,
			"backend":        plan.Backend,
			"target":         plan.Policy.Target,
			"argv":           nonNil(plan.Argv),
			"environment":    envNames(plan.Environ),
			"warnings":       nonNil(plan.Warnings()),
			"user":           plan.RunsAs(),
		}
		if a := agentDoc(plan.Policy); a != nil {
			doc["agent"] = a
		}
		if r := plan.Config.Requirements; r != nil {
			doc["requirements"] = requirementsDoc(r, plan.Policy)
		}
		if s := plan.Seatbelt; s != nil {
			doc["sbpl"], doc["params"], doc["notes"] = s.Text, s.Params, nonNil(s.Notes)
		}
		// The descriptors run hands to bwrap, so that a tool can reproduce
		// the exact launch: the seccomp program's bytes (base64), the init
		// stage's config as an object (the environment's values left out).
		fds := map[string]any{}
		if plan.Seccomp != nil {
			fds[strconv.Itoa(initcfg.FDSeccomp)] = map[string]any{
				"what": "the base seccomp filter: struct sock_filter[], little-endian", "base64": plan.Seccomp}
		}
		if plan.Init != nil {
			fds[strconv.Itoa(initcfg.FDInit)] = map[string]any{
				"what": "the init stage's config", "config": plan.InitShown}
		}
		if plan.Launch != nil {
			fds[strconv.Itoa(initcfg.FDSelf)] = map[string]any{"what": "the init stage's executable: grok-sandbox-init beside grok-sandbox when of the same build, else grok-sandbox's own (see help backends)"}
		}
		doc["descriptors"] = fds
		return writeJSON(w, doc)
	}
	if s := plan.Seatbelt; s != nil {
		// The profile is one argument of many lines: show the argv with a
		// placeholder, then the profile itself.
		for i, a := range plan.Argv {
			if i > 0 && plan.Argv[i-1] == "-p" {
				a = "(the profile below)"
			}
			fmt.Fprintln(w, printable.String(a))
		}
		fmt.Fprintln(w)
		for _, line := range strings.SplitAfter(s.Text, "\n") {
			if text, nl := strings.CutSuffix(line, "\n"); nl {
				fmt.Fprintln(w, printable.String(text))
			} else {
				fmt.Fprint(w, printable.String(text))
			}
		}
		return nil
	}
	for _, a := range plan.Argv {
		fmt.Fprintln(w, printable.String(a))
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// envNames groups the environment decisions by action: names only, never
// values.
func envNames(r envpolicy.Result) map[string][]string {
	out := map[string][]string{}
	for _, d := range r.Decisions {
		out[d.Action] = append(out[d.Action], d.Name)
	}
	return out
}

// Explain writes the resolved capability set for people.
func Explain(inv launcher.Invocation, asJSON bool, w io.Writer) error {
	// A read-only verb: nothing is created on the host.
	inv.DryRun = true
	if err := checkTarget(inv.Target); err != nil {
		return err
	}
	plan, err := launcher.Prepare(inv)
	if err != nil {
		return err
	}
	p := plan.Policy
	if asJSON {
		return writeJSON(w, explainDoc(plan))
	}
	fmt.Fprintln(w, printable.String(inWords(p)))
	fmt.Fprintln(w)
	fmt.Fprintf(w, "profile:   %s (%s)\n", printable.String(p.Profile), printable.String(describeSource(p)))
	fmt.Fprintf(w, "chosen by: %s\n", printable.String(plan.Selection.By))
	fmt.Fprintf(w, "target:    %s\n", p.Target)
	fmt.Fprintf(w, "backend:   %s\n", plan.Backend)
	fmt.Fprintf(w, "workspace: %s\n", printable.String(p.Workspace))
	id := plan.RunsAs()
	fmt.Fprintf(w, "runs as:   uid %d, gid %d (%s)\n", id.UID, id.GID, id.How)
	if r := plan.Config.Requirements; r != nil {
		fmt.Fprintf(w, "required:  %s (the administrator's: %s)\n", printable.String(r.File), printable.String(requirementsWords(r)))
	}
	if !p.Enforce {
		fmt.Fprintln(w, "\nno sandbox: the command can read, write and reach everything you can.")
		explainWarnings(w, plan.Warnings())
		return nil
	}
	fmt.Fprintln(w, "\npaths (a row holds for everything below it that no deeper row names):")
	writeTable(w, pathRows(plan))
	if len(p.Deny) > 0 {
		fmt.Fprintln(w, "\ndeny rules (a denied path: no read, no write, no rename):")
		for _, d := range p.Deny {
			from := ""
			if d.Source == p.Requirements && d.Source != "" {
				from = " (required by " + printable.String(d.Source) + ")"
			}
			fmt.Fprintf(w, "  rule %q anchored at %s%s\n", d.Entry, printable.String(d.Prefix), from)
		}
		for _, s := range p.Skipped {
			fmt.Fprintf(w, "  skipped %s  (%s: %s)\n", printable.String(s.Path), printable.String(s.Entry), s.Reason)
		}
		if p.Target == "linux" {
			fmt.Fprintln(w, "  on Linux globs are expanded at launch: files created later are not covered")
		}
	}
	if len(p.Protected) == 0 {
		fmt.Fprintln(w, "\nhook protection: none")
	}
	if plan.Landlock != nil {
		fmt.Fprintf(w, "\nLandlock (ABI %d) enforces this run instead of bubblewrap:\n", plan.Landlock.ABI)
		for _, note := range plan.Landlock.Notes {
			fmt.Fprintf(w, "  %s\n", printable.String(note))
		}
		fmt.Fprintln(w, "Landlock rules:")
		for _, r := range plan.Landlock.Rules {
			fmt.Fprintf(w, "  %s  %s\n", printable.String(r.Path), landlock.AccessString(r.Access))
		}
	}
	if p.Target == "darwin" {
		if s, err := launcher.RenderNotes(p); err == nil {
			for _, note := range s {
				fmt.Fprintf(w, "macOS: %s\n", printable.String(note))
			}
		}
	}
	n := networkWords(p)
	fmt.Fprintf(w, "\nnetwork:\n  the wrapped command: %s\n  its children:        %s\n", n["command"], n["children"])
	if p.Network.ForcedBy != "" {
		fmt.Fprintf(w, "  the children's restriction is required by %s restrict_network\n", printable.String(p.Network.ForcedBy))
	}
	explainAgent(w, p)
	explainViolations(w, plan)
	if p.Enforce && p.Target == "linux" {
		explainKernel(w, plan)
	}
	explainCaches(w, p)
	explainEnv(w, plan.Environ)
	explainWarnings(w, plan.Warnings())
	return nil
}

// toolCaches are the common tool caches in home: where workspace leaves them
// read-only and strict hides them, builds fail, and users look here first.
var toolCaches = []string{".cache", "go", ".npm", ".cargo"}

// inWords answers, in one line, what explain's question is: what may the
// command read and write, and who has the network.
func inWords(p *policy.Policy) string {
	if !p.Enforce {
		return p.Profile + ": no sandbox: the command reads, writes and reaches everything you can"
	}
	kinds := func(acc policy.Access) string {
		var out []string
		for _, g := range p.Grants {
			if g.Access != acc || p.AccessAt(g.Path) != acc {
				continue
			}
			what := g.Why
			switch {
			case strings.HasPrefix(what, "system path"), strings.HasPrefix(what, "name resolution"):
				what = "system paths"
			case what == "temporary directory":
				what = "temp dirs"
			case what == "workspace":
				what = "the workspace"
			case what == "top-level directory":
				what = "every top-level directory"
			case strings.HasSuffix(what, " entry"):
				what = "your " + strings.TrimSuffix(what, " entry") + " entries"
			}
			if !contains(out, what) {
				out = append(out, what)
			}
		}
		return strings.Join(out, ", ")
	}
	reads := "reads everything"
	if !p.ReadAll {
		reads = "reads " + kinds(policy.Read)
		if w := kinds(policy.Write); w != "" {
			reads += ", " + w
		}
	}
	if len(p.Deny) > 0 {
		reads += " except what is denied"
	}
	line := fmt.Sprintf("%s: %s; writes %s", p.Profile, reads, kinds(policy.Write))
	switch n := networkWords(p); {
	case p.Network.Isolate:
		line += "; nothing has network but a private loopback"
	case strings.HasPrefix(n["children"], "a private loopback"):
		line += "; the command has network, what it starts only a private loopback"
	default:
		line += "; network for all"
	}
	return line
}

// explainCaches names the tool caches a build in this sandbox could not
// write.
func explainCaches(w io.Writer, p *policy.Policy) {
	if !p.Enforce || p.Home == "" {
		return
	}
	var ro, hidden []string
	for _, c := range toolCaches {
		path := filepath.Join(p.Home, c)
		switch p.AccessAt(path) {
		case policy.Read:
			ro = append(ro, "~/"+c)
		case policy.Hidden:
			hidden = append(hidden, "~/"+c)
		}
	}
	if len(ro) == 0 && len(hidden) == 0 {
		return
	}
	fmt.Fprintln(w, "\ntool caches (go build, npm, pip, cargo write there; see `grok-sandbox help recipes`):")
	if len(ro) > 0 {
		fmt.Fprintf(w, "  read-only: %s\n", strings.Join(ro, " "))
	}
	if len(hidden) > 0 {
		fmt.Fprintf(w, "  hidden:    %s\n", strings.Join(hidden, " "))
	}
}

// explainKernel states the layers every process of a Linux sandbox is held
// to, whatever its profile's paths say.
func explainKernel(w io.Writer, plan *launcher.Plan) {
	p := plan.Policy
	fmt.Fprintln(w, "\nevery process in the sandbox:")
	if plan.Backend == launcher.BackendLandlock {
		fmt.Fprintln(w, "  /proc: not writable (Landlock), so no process can write another's memory through /proc/PID/mem")
	} else if p.NestedUserNS {
		fmt.Fprintln(w, "  /dev and /proc: fresh; /proc writable (nested user namespaces need it; pid 1 is out of reach all the same), /proc/sys and /sys read-only")
	} else {
		fmt.Fprintln(w, "  /dev and /proc: fresh; /proc read-only as a whole (no process can write another's memory through /proc/PID/mem), /proc/sys and /sys read-only")
	}
	blocked := "terminal injection (TIOCSTI, TIOCLINUX), the kernel keyring (add_key, request_key, keyctl), io_uring, setuid and setgid file modes, changing another process's limits, scheduling, affinity or priorities, fault signals with a queued siginfo"
	if !p.NestedUserNS {
		blocked += ", new user namespaces"
	}
	fmt.Fprintf(w, "  seccomp refuses: %s\n", blocked)
	fmt.Fprintln(w, "  capabilities: none, even for root; no_new_privs")
	if p.NestedUserNS {
		fmt.Fprintln(w, "  nested user namespaces: allowed")
	} else {
		fmt.Fprintln(w, "  nested user namespaces: disabled (mounts cannot be rearranged from inside)")
	}
	if plan.Backend == launcher.BackendBwrap {
		fmt.Fprintln(w, "  pid 1: grok-sandbox's init stage, non-dumpable; it checks every layer above before the command starts, and refuses to start it otherwise")
	}
}

// violationWords says, line by line, whether and how this run observes
// attempts on denied and protected paths (logged as "violation" events).
func violationWords(plan *launcher.Plan) []string {
	p := plan.Policy
	switch plan.Backend {
	case launcher.BackendBwrap:
		protected := 0
		for _, q := range p.Protected {
			if p.Exposed(q) {
				protected++
			}
		}
		if mode, _ := launcher.ObserveMode(); mode == launcher.ObserveOff {
			return []string{"not observed: GROK_SANDBOX_OBSERVE=off (every access is refused all the same)"}
		}
		if len(p.Masks) == 0 && protected == 0 {
			return []string{"none to observe: no deny entry matched and nothing is hook-protected"}
		}
		var lines []string
		if len(p.Masks) > 0 {
			if ok, why := launcher.FuseStatus(); ok {
				lines = append(lines, "denied paths: every open, stat, listing and exec is observed by the masks' own file system (FUSE, served by the init stage's observer); other paths cost nothing")
			} else {
				lines = append(lines, "denied paths: opens, stats, listings and execs are NOT observed in this run: "+printable.String(why)+" (they are refused all the same)")
			}
			lines = append(lines, "renames, removals and links of denied paths, writes to them: observed (a seccomp filter on the command)")
		}
		if protected > 0 {
			lines = append(lines, "writes, renames and removals under protected paths: observed (a seccomp filter on the command)")
		}
		return lines
	case launcher.BackendLandlock:
		return []string{"not observed under the Landlock backend (every access is refused all the same)"}
	case launcher.BackendSeatbelt:
		return []string{"Seatbelt reports each denial to the system log; each deny rule names its entry: " + seatbeltLogCommand}
	}
	return []string{"not observed: nothing is enforced"}
}

// seatbeltLogCommand shows the system log's reports of the denials of deny
// rules (see sbpl's "with message").
const seatbeltLogCommand = `log stream --style compact --predicate 'sender == "Sandbox" AND eventMessage CONTAINS "` + sbpl.MessagePrefix + `"'`

func explainViolations(w io.Writer, plan *launcher.Plan) {
	fmt.Fprintln(w, "\nviolations (attempts on denied and protected paths, logged to the event log):")
	for _, l := range violationWords(plan) {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// accessWord is an access as the JSON documents spell it.
func accessWord(a policy.Access) string {
	switch a {
	case policy.Read:
		return "read"
	case policy.Write:
		return "write"
	}
	return "hidden"
}

// explainDoc is explain's JSON document: what explain says for people, with
// snake_case keys, access as words and [] for an empty list.
func explainDoc(plan *launcher.Plan) map[string]any {
	p := plan.Policy
	type path struct {
		Path   string `json:"path"`
		Access string `json:"access"`
		Why    string `json:"why"`
		From   string `json:"from"`
	}
	type link struct {
		Path   string `json:"path"`
		Target string `json:"target"`
	}
	type rule struct {
		Entry  string `json:"entry"`
		Prefix string `json:"anchored_at"`
		Rest   string `json:"glob"`
		From   string `json:"from"`
	}
	type mask struct {
		Path   string `json:"path"`
		Access string `json:"access"`
		Dir    bool   `json:"directory"`
		Entry  string `json:"entry"`
	}
	type skipped struct {
		Path   string `json:"path"`
		Entry  string `json:"entry"`
		Reason string `json:"reason"`
	}
	type protected struct {
		Path string `json:"path"`
		Why  string `json:"why"`
	}
	paths := []path{}
	for _, g := range p.Grants {
		paths = append(paths, path{g.Path, accessWord(p.AccessAt(g.Path)), g.Why, g.Source})
	}
	links := []link{}
	for _, l := range p.Links {
		links = append(links, link{l.Path, l.Target})
	}
	rules, masks, skips := []rule{}, []mask{}, []skipped{}
	for _, d := range p.Deny {
		rules = append(rules, rule{d.Entry, d.Prefix, d.Rest, d.Source})
	}
	for _, m := range p.Masks {
		masks = append(masks, mask{m.Path, "denied", m.Dir, m.Entry})
	}
	for _, sk := range p.Skipped {
		skips = append(skips, skipped{sk.Path, sk.Entry, sk.Reason})
	}
	prot := []protected{}
	for _, q := range p.Protected {
		prot = append(prot, protected{q, p.ProtectedWhy[q]})
	}
	doc := map[string]any{
		"schema_version":   launcher.SchemaVersion,
		"profile":          p.Profile,
		"base":             p.Base,
		"source":           p.Source,
		"chosen_by":        plan.Selection.By,
		"target":           p.Target,
		"backend":          plan.Backend,
		"enforced":         p.Enforce,
		"workspace":        p.Workspace,
		"home":             p.Home,
		"grok_home":        p.GrokHome,
		"reads_everything": p.ReadAll,
		"paths":            paths,
		"links":            links,
		"denied":           map[string]any{"rules": rules, "masked": masks, "skipped": skips},
		"protected":        prot,
		"pinned":           nonNil(p.Pinned),
		"network":          networkWords(p),
		"violations":       violationWords(plan),
		"allow_hosts":      allowHosts(p),
		"environment":      envNames(plan.Environ),
		"warnings":         nonNil(plan.Warnings()),
		"user":             plan.RunsAs(),
	}
	if a := agentDoc(p); a != nil {
		doc["agent"] = a
	}
	if r := plan.Config.Requirements; r != nil {
		doc["requirements"] = requirementsDoc(r, p)
	}
	if p.Target == "linux" {
		doc["nested_user_namespaces"] = p.NestedUserNS
	}
	return doc
}

// requirementsDoc is what the administrator's requirements file imposed
// on this plan, for explain --json and print --json.
func requirementsDoc(r *config.Requirements, p *policy.Policy) map[string]any {
	return map[string]any{
		"file":                  r.File,
		"default_profile":       r.DefaultProfile,
		"allowed_profiles":      nonNil(r.Allowed),
		"deny":                  nonNil(r.Deny),
		"restrict_network":      r.RestrictNetwork,
		"network_restricted_by": p.Network.ForcedBy,
		"profiles":              nonNil(slices.Sorted(maps.Keys(r.Profiles))),
	}
}

func describeSource(p *policy.Policy) string {
	if p.Source == "built-in" {
		return "built-in"
	}
	return fmt.Sprintf("custom, extends %s, defined in %s", p.Base, p.Source)
}

// requirementsWords says what the administrator's requirements impose.
func requirementsWords(r *config.Requirements) string {
	var parts []string
	if r.DefaultProfile != "" {
		parts = append(parts, fmt.Sprintf("default profile %s (line %d)", r.DefaultProfile, r.Line("default_profile")))
	}
	if r.Allowed != nil {
		parts = append(parts, fmt.Sprintf("only %s allowed (line %d)", strings.Join(r.Allowed, ", "), r.Line("allowed_profiles")))
	}
	if len(r.Deny) > 0 {
		parts = append(parts, fmt.Sprintf("%d deny entries in every launch (line %d)", len(r.Deny), r.Line("deny")))
	}
	if r.RestrictNetwork {
		parts = append(parts, fmt.Sprintf("restrict_network in every profile (line %d)", r.Line("restrict_network")))
	}
	if len(r.Profiles) > 0 {
		parts = append(parts, "profiles "+strings.Join(slices.Sorted(maps.Keys(r.Profiles)), ", "))
	}
	if len(parts) == 0 {
		return "nothing imposed"
	}
	return strings.Join(parts, "; ")
}

// networkWords states the network rule for the wrapped command and for the
// processes it starts.
func networkWords(p *policy.Policy) map[string]string {
	switch {
	case !p.Enforce:
		return map[string]string{"command": "unrestricted", "children": "unrestricted"}
	case p.Network.Isolate && p.Target == "darwin":
		return map[string]string{"command": "none (Seatbelt denies all network operations)", "children": "none"}
	case p.Network.Isolate:
		return map[string]string{"command": "none of the host's: a private loopback only, shared with its children (IP sockets in a network namespace with only lo: 127.0.0.1 and ::1), Unix sockets only among the sandbox's own (socket files bound inside, abstract names of its own; datagram ones too, whose sends pid 1 makes (Linux 5.19 and later); no host Unix or abstract socket)", "children": "the same private loopback, nothing else"}
	case p.Network.RestrictChildren && p.Target == "darwin":
		return map[string]string{"command": "unrestricted", "children": "unrestricted (restrict_network is a no-op on macOS)"}
	case p.Network.RestrictChildren && len(p.Network.AllowHosts) > 0:
		hosts := make([]string, len(p.Network.AllowHosts))
		for i, h := range p.Network.AllowHosts {
			hosts[i] = h.String()
		}
		return map[string]string{
			"command":  "unrestricted (it keeps its network, e.g. for its model API; through the proxy variables it sees too)",
			"children": "a private loopback, and through grok-sandbox's proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and lower-case forms set for them) exactly: " + printable.String(strings.Join(hosts, ", ")) + " (a name without a port: 80 and 443; *.domain: not the bare domain); nothing else of the host's (not its loopback services, no other address), Unix sockets only among themselves (socket files they bound, abstract names of their own; datagram ones too, whose sends pid 1 makes (Linux 5.19 and later); no host Unix or abstract socket; under the Landlock fallback no Unix connect at all), no io_uring; socketpair and pipes work",
		}
	case p.Network.RestrictChildren:
		return map[string]string{
			"command":  "unrestricted (it keeps its network, e.g. for its model API)",
			"children": "a private loopback only: their IP sockets live in a network namespace of their own (they serve and reach each other on 127.0.0.1 and ::1), nothing of the host's (not its loopback services, no other address), Unix sockets only among themselves (socket files they bound, abstract names of their own; datagram ones too, whose sends pid 1 makes (Linux 5.19 and later); no host Unix or abstract socket; under the Landlock fallback no Unix connect at all), no io_uring; socketpair and pipes work",
		}
	}
	return map[string]string{"command": "unrestricted", "children": "unrestricted"}
}

func explainEnv(w io.Writer, r envpolicy.Result) {
	names := envNames(r)
	fmt.Fprintln(w, "\nenvironment (names only):")
	for _, action := range []string{envpolicy.ActionDropped, envpolicy.ActionSet, envpolicy.ActionForced, envpolicy.ActionKept} {
		if len(names[action]) > 0 {
			fmt.Fprintf(w, "  %-8s %s\n", action, printable.String(strings.Join(names[action], " ")))
		}
	}
}

func explainWarnings(w io.Writer, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	fmt.Fprintln(w, "\nwarnings:")
	for _, msg := range warnings {
		fmt.Fprintf(w, "  %s\n", printable.String(msg))
	}
}

// readConfig locates the directories on host and reads the config files,
// creating nothing (a read-only verb), and lists the custom profiles'
// names, sorted.
func readConfig(inv launcher.Invocation, host resolve.Host) (resolve.Dirs, *config.Config, []string, error) {
	inv.DryRun = true
	env, err := resolve.LocateDirs(inv.Request, host)
	if err != nil {
		return env, nil, nil, err
	}
	cfg, err := config.Load(env.GrokHome, env.Workspace)
	if err != nil {
		return env, nil, nil, err
	}
	return env, cfg, slices.Sorted(maps.Keys(cfg.Profiles)), nil
}

// Profiles lists every profile: name, where it is defined, what it extends.
func Profiles(inv launcher.Invocation, w io.Writer) error {
	_, cfg, names, err := readConfig(inv, launcher.ProbeHost())
	if err != nil {
		return err
	}
	r := cfg.Requirements
	notAllowed := func(name string) string {
		if r != nil {
			if msg := r.Admit(name, "you"); msg != "" {
				return ", not allowed here (" + r.File + ")"
			}
		}
		return ""
	}
	for _, b := range config.Builtins {
		alias := ""
		if b == config.Off {
			alias = " (alias: none)"
		}
		fmt.Fprintf(w, "%-12s built-in%s%s\n", b, alias, notAllowed(b))
	}
	for _, n := range names {
		c := cfg.Profiles[n]
		ext := c.Extends
		if ext == "" {
			ext = config.Workspace
		}
		admin := ""
		if r != nil && c.File == r.File {
			admin = " (the administrator's)"
		}
		fmt.Fprintf(w, "%-12s %s:%d%s, extends %s%s\n", printable.String(n), printable.String(c.File), c.Line, admin, printable.String(ext), notAllowed(n))
	}
	for _, s := range cfg.Shadowed {
		fmt.Fprintf(w, "%-12s %s:%d, ignored: a built-in name\n", printable.String(s.Name), printable.String(s.File), s.Line)
	}
	for _, o := range cfg.Overridden {
		fmt.Fprintf(w, "%-12s %s:%d, ignored: the administrator defines it (%s:%d)\n", printable.String(o.Name), printable.String(o.User.File), o.User.Line, printable.String(o.Admin.File), o.Admin.Line)
	}
	if u := cfg.Untrusted; u != nil {
		fmt.Fprintf(w, "\nnot read: %s\n", printable.String(u.Message()))
	} else if contains(cfg.Files, cfg.ProjectFile) {
		fmt.Fprintf(w, "\nproject profiles: %s (trusted)\n", printable.String(cfg.ProjectFile))
	}
	return nil
}

// Check validates every config file and every custom profile in them.
func Check(inv launcher.Invocation, w io.Writer) error {
	host := launcher.ProbeHost()
	// Files are checked wherever check runs (home, where people edit
	// ~/.grok/sandbox.toml, or /): the profiles are resolved against a
	// neutral, empty workspace, never refused for the current directory;
	// the project file is the current directory's.
	neutral, err := os.MkdirTemp("", "grok-sandbox-check-")
	if err != nil {
		return resolve.Refuse("cannot make a directory to check against: %v", err)
	}
	defer os.RemoveAll(neutral)
	req := inv.Request
	req.DryRun = true
	req.Workspace = neutral
	env, err := resolve.LocateDirs(req, host)
	if err != nil {
		return err
	}
	project := host.Cwd
	if project == "" {
		project, _ = os.Getwd()
	}
	// check validates the project file whether or not you trust it; a
	// launch reads it only once trusted (it says so below).
	cfg, err := config.LoadUntrusted(env.GrokHome, project)
	if err != nil {
		return err
	}
	trusted, err := config.Load(env.GrokHome, project)
	if err != nil {
		return err
	}
	var warnings, errs []string
	if r := cfg.Requirements; r != nil && len(r.Deny) > 0 {
		// The required deny entries, checked in a profile of their own.
		req.Target = "linux"
		if _, err := resolve.Resolve(req, host, env, cfg, resolve.Selection{Name: config.Workspace, By: "check"}); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, n := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		req.Target = "linux"
		p, err := resolve.Resolve(req, host, env, cfg, resolve.Selection{Name: n, By: "check"})
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		warnings = append(warnings, p.Warnings...)
	}
	if cfg.Default != "" {
		sel := resolve.Selection{Name: cfg.Default, By: fmt.Sprintf("%s:%d [sandbox] profile", cfg.GeneralFile, cfg.DefaultLine)}
		if _, err := resolve.Resolve(req, host, env, cfg, sel); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if u := trusted.Untrusted; u != nil && !contains(cfg.Files, u.File) {
		warnings = append(warnings, u.Message())
	}
	for _, msg := range dedupe(warnings) {
		fmt.Fprintln(w, "warning: "+printable.String(msg))
	}
	// Every error, one line each, as a refusal says it.
	errs = dedupe(errs)
	for _, msg := range errs[:max(0, len(errs)-1)] {
		fmt.Fprintln(inv.Stderr, "grok-sandbox: "+printable.String(msg))
	}
	if len(errs) > 0 {
		return resolve.Refuse("%s", errs[len(errs)-1])
	}
	for _, f := range cfg.Files {
		note := ""
		if u := trusted.Untrusted; u != nil && f == u.File {
			note = " (" + u.Reason + ": launches do not read it until `grok-sandbox trust`)"
		}
		fmt.Fprintf(w, "ok: %s%s\n", printable.String(f), printable.String(note))
	}
	if len(cfg.Files) == 0 {
		fmt.Fprintln(w, "ok: no config files")
	}
	return nil
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// allowHosts are the allow_hosts entries in force, canonical.
func allowHosts(p *policy.Policy) []string {
	out := []string{}
	for _, h := range p.Network.AllowHosts {
		out = append(out, h.String())
	}
	return out
}
