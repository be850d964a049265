package verbs

import (
	"fmt"
	"io"
	"os"

	"grok-sandbox/launcher"
	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/resolve"
)

// Status says whether the calling process is sandboxed, by which profile and
// backend, from evidence the sandbox cannot forge. It refuses (exit 125)
// when the environment claims a sandbox the kernel does not show.
func Status(w io.Writer, asJSON bool) error {
	r := launcher.CurrentStatus()
	if asJSON {
		if err := writeJSON(w, r); err != nil {
			return err
		}
		if !r.Sandboxed && r.Lie != "" {
			return resolve.Refuse("%s", r.Lie)
		}
		return nil
	}
	if !r.Sandboxed {
		switch {
		case r.Lie != "":
			fmt.Fprintf(w, "NOT sandboxed: %s\n", r.Lie)
			return resolve.Refuse("GROK_SANDBOX_PROFILE=%s is set but this process is not in a grok-sandbox sandbox", printable.String(os.Getenv("GROK_SANDBOX_PROFILE")))
		case r.Kernel.NoNewPrivs && r.Kernel.Seccomp:
			fmt.Fprintln(w, "not sandboxed by grok-sandbox (this process has no_new_privs and a seccomp filter from something else)")
		default:
			fmt.Fprintln(w, "not sandboxed")
		}
		return nil
	}
	backend := r.Backend
	if backend == "" {
		backend = "unknown"
	}
	fmt.Fprintf(w, "sandboxed: profile %s, backend %s\n", r.Profile, backend)
	fmt.Fprintf(w, "profile from: %s\n", r.ProfileFrom)
	if r.Requirements != "" {
		fmt.Fprintf(w, "requirements: %s (the administrator's; `grok-sandbox explain` outside says what they impose)\n", r.Requirements)
	}
	if r.Lie != "" {
		fmt.Fprintf(w, "warning: %s\n", r.Lie)
	}
	fmt.Fprintln(w, "kernel evidence:")
	fmt.Fprintf(w, "  no_new_privs:   %v\n", r.Kernel.NoNewPrivs)
	fmt.Fprintf(w, "  seccomp filter: %v\n", r.Kernel.Seccomp)
	fmt.Fprintf(w, "  capabilities:   %s\n", r.Kernel.Capabilities)
	ns := "no"
	if r.Kernel.UserNamespace {
		ns = "yes (uid_map " + r.Kernel.UIDMap + ")"
	}
	fmt.Fprintf(w, "  user namespace: %s\n", ns)
	return nil
}
