package verbs

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"grok-sandbox/launcher"
	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/resolve"
)

// Trust records the project file of dir (WORKSPACE/.grok/sandbox.toml) as
// trusted with its content now, or revokes that (grok-sandbox help
// config: "Project profiles and trust"). Launches read a project file only while it is
// trusted and unchanged. It is refused inside any sandbox: a process
// there must never decide what a later launch reads.
func Trust(inv launcher.Invocation, revoke, list bool, w io.Writer) error {
	if e := launcher.ReadEvidence(); e.Sandboxed() {
		return resolve.Refuse("trust is refused inside a sandbox (this process has no_new_privs and a seccomp filter): run it in your own shell, outside any sandbox")
	}
	env, err := resolve.LocateDirs(inv.Request, launcher.ProbeHost())
	if err != nil {
		return err
	}
	if list {
		entries, err := config.ReadTrust(env.GrokHome)
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			fmt.Fprintln(w, "no trusted project files")
		}
		for _, e := range entries {
			fmt.Fprintf(w, "%s  sha256 %s  trusted %s\n", printable.String(e.File), e.SHA256[:min(12, len(e.SHA256))], printable.String(e.Time))
		}
		return nil
	}
	file := env.Workspace + "/.grok/sandbox.toml"
	if revoke {
		changed, err := config.SetTrust(env.GrokHome, file, "")
		if err != nil {
			return resolve.Refuse("trust --revoke: %v", err)
		}
		if changed {
			fmt.Fprintf(w, "no longer trusted: %s (launches ignore its profiles)\n", printable.String(file))
		} else {
			fmt.Fprintf(w, "%s was not trusted\n", printable.String(file))
		}
		return nil
	}
	data, ok, err := config.ReadProjectFile(env.Workspace)
	switch {
	case !ok:
		return resolve.Refuse("trust: there is no %s to trust", file)
	case err != nil:
		return resolve.Refuse("trust: %s %v", file, err)
	}
	profiles, err := config.ParseProjectFile(file, data)
	if err != nil {
		return resolve.Refuse("trust: fix the file first: %v", err)
	}
	sum := config.Sum(data)
	if _, err := config.SetTrust(env.GrokHome, file, sum); err != nil {
		return resolve.Refuse("trust: %v", err)
	}
	names := slices.Sorted(maps.Keys(profiles))
	what := "no profiles"
	if len(names) > 0 {
		what = "profiles " + strings.Join(names, ", ")
	}
	fmt.Fprintf(w, "trusted: %s (sha256 %s): %s; a change to it is not read until you trust it again\n", printable.String(file), sum[:12], printable.String(what))
	// What was trusted, byte for byte as it was hashed: a sandbox still
	// running in the workspace could have changed the file since you
	// read it.
	fmt.Fprintln(w, "what you trusted (grok-sandbox trust --revoke if it is not what you read):")
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line != "" {
			fmt.Fprintf(w, "  | %s\n", printable.String(strings.TrimSuffix(line, "\n")))
		}
	}
	return nil
}
