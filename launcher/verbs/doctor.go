package verbs

import (
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"

	"grok-sandbox/launcher"
	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/initbin"
	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/resolve"
)

// Doctor reports what this machine can enforce and what the config says:
// platform, bubblewrap, user namespaces, Landlock, which backend would
// enforce each profile, the config files, and every global/project conflict
// with how to resolve it.
func Doctor(inv launcher.Invocation, out io.Writer) error {
	// A read-only verb: nothing is created on the host.
	inv.DryRun = true
	env, err := resolve.LocateDirs(inv.Request, launcher.ProbeHost())
	if err != nil {
		return err
	}
	// The details go to a buffer: the summary they lead to comes first.
	var detail strings.Builder
	w := &detail
	var backends, degraded, refused, fallbacks []string
	var cfg *config.Config
	defer func() {
		fmt.Fprintln(out, "summary:")
		fmt.Fprintf(out, "  platform: %s/%s", runtime.GOOS, runtime.GOARCH)
		if len(backends) > 0 {
			fmt.Fprintf(out, "; enforced here by %s", strings.Join(backends, ", "))
		}
		fmt.Fprintln(out)
		switch {
		case cfg == nil:
		case cfg.Default != "":
			fmt.Fprintf(out, "  default profile: %s (%s:%d [sandbox] profile)\n", printable.String(cfg.Default), printable.String(cfg.GeneralFile), cfg.DefaultLine)
		case cfg.Requirements != nil && cfg.Requirements.DefaultProfile != "":
			r := cfg.Requirements
			fmt.Fprintf(out, "  default profile: %s (%s default_profile)\n", printable.String(r.DefaultProfile), printable.String(r.Where("default_profile")))
		case cfg.Requirements != nil && cfg.Requirements.Admit(config.Off, "default") != "":
			fmt.Fprintf(out, "  default profile: none: without --profile or GROK_SANDBOX, run is refused (%s does not allow off)\n", printable.String(cfg.Requirements.File))
		default:
			fmt.Fprintf(out, "  default profile: off (no [sandbox] profile in %s): without --profile or GROK_SANDBOX, run does not sandbox\n", printable.String(cfg.GeneralFile))
		}
		for _, d := range degraded {
			fmt.Fprintf(out, "  warning: %s\n", printable.String(d))
		}
		if len(fallbacks) > 0 {
			fmt.Fprintf(out, "  degraded: %s\n", printable.String(strings.Join(fallbacks, ", ")))
		}
		if len(refused) > 0 {
			fmt.Fprintf(out, "  refused here: %s (see below)\n", printable.String(strings.Join(refused, ", ")))
		}
		fmt.Fprintln(out)
		io.WriteString(out, detail.String())
	}()
	fmt.Fprintf(w, "platform:   %s/%s", runtime.GOOS, runtime.GOARCH)
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		fmt.Fprintf(w, ", kernel %s", strings.TrimSpace(string(rel)))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "GROK_HOME:  %s\n", printable.String(env.GrokHome))
	fmt.Fprintf(w, "workspace:  %s\n", printable.String(env.Workspace))
	if runtime.GOOS == "linux" {
		b := launcher.FindBwrap(env.GrokHome, false, false)
		switch {
		case b.Path == "":
			fmt.Fprintf(w, "bwrap:      not found: %s\n", printable.String(b.Reason))
		case b.Usable:
			fmt.Fprintf(w, "bwrap:      %s, version %s, works\n", printable.String(b.Path), b.Version)
		default:
			fmt.Fprintf(w, "bwrap:      %s, version %s, does NOT work: %s\n", printable.String(b.Path), b.Version, printable.String(b.Reason))
		}
		if fd, why := initbin.Open(); fd >= 0 {
			syscall.Close(fd)
			fmt.Fprintf(w, "init stage: %s beside grok-sandbox, of the same build (it starts faster)\n", initbin.Name)
		} else {
			fmt.Fprintf(w, "init stage: grok-sandbox's own executable (%s not used: %s)\n", initbin.Name, printable.String(why))
		}
		for _, f := range []string{"/proc/sys/user/max_user_namespaces", "/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"} {
			if data, err := os.ReadFile(f); err == nil {
				fmt.Fprintf(w, "userns:     %s = %s\n", strings.TrimPrefix(f, "/proc/sys/"), strings.TrimSpace(string(data)))
			}
		}
		yama := "absent"
		if data, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
			yama = "ptrace_scope " + strings.TrimSpace(string(data))
		}
		fmt.Fprintf(w, "ptrace:     Yama %s; not needed: no sandbox can write another process's memory (/proc is read-only under bwrap and not writable under Landlock; ptrace, process_vm_writev and pidfd_getfd are refused to children under restrict_network)\n", yama)
		if ok, why := launcher.FuseStatus(); ok {
			fmt.Fprintf(w, "fuse:       %s opens: touches of denied paths are logged (the mask observer)\n", launcher.FuseDevice)
		} else {
			fmt.Fprintf(w, "fuse:       no file violations on denied paths: %s (renames, removals, links and writes are still logged)\n", printable.String(why))
		}
		if abi := launcher.LandlockABI(); abi > 0 {
			fmt.Fprintf(w, "landlock:   ABI %d\n", abi)
		} else {
			fmt.Fprintln(w, "landlock:   not available (needs Linux 5.13 or later with Landlock enabled)")
		}
	}
	cfg, err = config.Load(env.GrokHome, env.Workspace)
	if err != nil {
		fmt.Fprintf(w, "config:     ERROR %s\n", printable.String(err.Error()))
		return err
	}
	fmt.Fprintln(w, "\nconfig files:")
	if r := cfg.Requirements; r != nil {
		fmt.Fprintf(w, "  %-11s %s (the administrator's requirements; it and every directory above it are root's and writable by root alone): %s\n", "read", printable.String(r.File), printable.String(requirementsWords(r)))
	} else {
		fmt.Fprintf(w, "  %-11s %s (the administrator's requirements)\n", "not present", printable.String(config.RequirementsFile()))
	}
	for _, f := range []string{cfg.GlobalFile, cfg.ProjectFile, cfg.GeneralFile} {
		state := "not present"
		note := ""
		switch {
		case cfg.Untrusted != nil && f == cfg.Untrusted.File:
			state, note = "NOT read", fmt.Sprintf(" (%s: `grok-sandbox trust %s` after you have read it)", cfg.Untrusted.Reason, cfg.Untrusted.Dir)
		case contains(cfg.Files, f):
			state = "read"
			if f == cfg.ProjectFile {
				note = " (trusted)"
			}
		}
		fmt.Fprintf(w, "  %-11s %s%s\n", state, printable.String(f), printable.String(note))
	}
	fmt.Fprintln(w, "\nprofiles (backend that would enforce each here):")
	names := append([]string{}, config.Builtins[1:]...)
	names = append(names, slices.Sorted(maps.Keys(cfg.Profiles))...)
	wouldCreate := append([]string(nil), env.WouldCreate()...)
	for _, name := range names {
		req := inv.Request
		req.Profile, req.ProfileFrom, req.Target = name, "doctor", runtime.GOOS
		plan, err := launcher.Prepare(launcher.Invocation{Request: req})
		if err == nil {
			for _, p := range plan.Dirs.WouldCreate() {
				if !contains(wouldCreate, p) {
					wouldCreate = append(wouldCreate, p)
				}
			}
		}
		switch {
		case err != nil:
			refused = append(refused, name)
			fmt.Fprintf(w, "  %-12s REFUSED: %s\n", printable.String(name), printable.String(err.Error()))
		case plan.Degraded != "":
			// What is missing is said once, in the summary.
			if why := plan.Bwrap.Reason; why != "" && !contains(degraded, why) {
				degraded = append(degraded, why)
			}
			fallbacks = append(fallbacks, name+" ("+plan.Backend+")")
			fmt.Fprintf(w, "  %-12s %s (degraded: see the summary; `grok-sandbox explain --profile %s` says what is lost)\n", printable.String(name), plan.Backend, printable.String(name))
		default:
			fmt.Fprintf(w, "  %-12s %s\n", printable.String(name), plan.Backend)
		}
		if err == nil && !contains(backends, plan.Backend) {
			backends = append(backends, plan.Backend)
		}
	}
	if len(wouldCreate) > 0 {
		// doctor, like every read-only verb, creates nothing itself.
		fmt.Fprintln(w, "\nrun would create (empty, before the first sandbox; doctor creates nothing):")
		sort.Strings(wouldCreate)
		for _, p := range wouldCreate {
			fmt.Fprintf(w, "  %s\n", printable.String(p))
		}
	}
	if len(cfg.Conflicts) == 0 && len(cfg.Shadowed) == 0 && len(cfg.Overridden) == 0 {
		fmt.Fprintln(w, "\nconflicts: none")
		return nil
	}
	fmt.Fprintln(w, "\nconflicts:")
	for _, c := range cfg.Conflicts {
		fmt.Fprintf(w, "  profile %q is defined in both files, differently:\n", c.Name)
		fmt.Fprintf(w, "    used:    %s:%d (global)\n", printable.String(c.Global.File), c.Global.Line)
		fmt.Fprintf(w, "    ignored: %s:%d (project)\n", printable.String(c.Project.File), c.Project.Line)
		fmt.Fprintf(w, "    to resolve: rename the project's profile (a project can only add names), or make the two definitions identical, or delete one\n")
	}
	for _, o := range cfg.Overridden {
		fmt.Fprintf(w, "  profile %q is defined by the administrator and by you, differently:\n", o.Name)
		fmt.Fprintf(w, "    used:    %s:%d (the administrator's)\n", printable.String(o.Admin.File), o.Admin.Line)
		fmt.Fprintf(w, "    ignored: %s:%d\n", printable.String(o.User.File), o.User.Line)
		fmt.Fprintf(w, "    to resolve: rename your profile, or remove it (the administrator's name always wins)\n")
	}
	for _, s := range cfg.Shadowed {
		fmt.Fprintf(w, "  [profiles.%s] in %s:%d is ignored: %q is a built-in profile; rename it\n", printable.String(s.Name), printable.String(s.File), s.Line, s.Name)
	}
	return nil
}
