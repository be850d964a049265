package launcher

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Evidence is what the kernel shows about the calling process's
// confinement, independent of what environment variables claim.
type Evidence struct {
	UserNamespace bool   // uid_map is not the identity map of the initial namespace
	UIDMap        string // first line of /proc/self/uid_map
	NoNewPrivs    bool
	Seccomp       bool // at least one seccomp filter
	Capabilities  string
	Readable      bool // /proc/self/status could be read at all
}

// Sandboxed reports whether the evidence shows a sandbox made by
// grok-sandbox: every backend sets no_new_privs and a seccomp filter.
func (e Evidence) Sandboxed() bool { return e.NoNewPrivs && e.Seccomp }

// ReadEvidence reads the calling process's confinement from /proc.
func ReadEvidence() Evidence {
	var e Evidence
	if data, err := os.ReadFile("/proc/self/uid_map"); err == nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
		e.UIDMap = strings.Join(strings.Fields(first), " ")
		e.UserNamespace = e.UIDMap != "0 0 4294967295"
	}
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return e
	}
	e.Readable = true
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "NoNewPrivs":
			e.NoNewPrivs = v == "1"
		case "Seccomp":
			e.Seccomp = v == "2"
		case "CapEff":
			e.Capabilities = v
		}
	}
	return e
}

// insideGrokSandbox reports whether this process runs inside a sandbox that
// grok-sandbox made, by the kernel's evidence (no_new_privs and a filter)
// and the init stage as pid 1 (bwrap) or the variables a launch sets
// (Landlock); it says which.
func insideGrokSandbox() (string, bool) {
	if !ReadEvidence().Sandboxed() {
		return "", false
	}
	profile, backend := os.Getenv("GROK_SANDBOX_PROFILE"), os.Getenv("GROK_SANDBOX_BACKEND")
	if cmdline, err := os.ReadFile("/proc/1/cmdline"); err == nil && strings.Contains(string(cmdline), "\x00"+InitCommand+"\x00") {
		if backend == "" {
			backend = BackendBwrap
		}
	} else if profile == "" {
		return "", false
	}
	if profile == "" {
		profile = "unknown"
	}
	return fmt.Sprintf("profile %s, backend %s", profile, backend), true
}

// Status says whether the calling process is sandboxed, by which profile and
// backend, checked against the kernel's evidence. It refuses (exit 125) when
// the environment claims a sandbox the kernel does not show.
func Status(w io.Writer) error {
	profile, backend := os.Getenv("GROK_SANDBOX_PROFILE"), os.Getenv("GROK_SANDBOX_BACKEND")
	e := ReadEvidence()
	if profile == "" {
		if e.Sandboxed() {
			fmt.Fprintln(w, "not sandboxed by grok-sandbox (this process has no_new_privs and a seccomp filter from something else)")
		} else {
			fmt.Fprintln(w, "not sandboxed")
		}
		return nil
	}
	if !e.Readable {
		fmt.Fprintf(w, "profile %s, backend %s, as the environment claims: /proc is not readable to check it\n", profile, backend)
		return nil
	}
	if !e.Sandboxed() {
		fmt.Fprintf(w, "NOT sandboxed: the environment says profile %s, backend %s, but the kernel shows no seccomp filter and no no_new_privs\n", profile, backend)
		return refuse("GROK_SANDBOX_PROFILE=%s is set but this process is not in a grok-sandbox sandbox", profile)
	}
	fmt.Fprintf(w, "sandboxed: profile %s, backend %s\n", profile, backend)
	fmt.Fprintln(w, "kernel evidence:")
	fmt.Fprintf(w, "  no_new_privs:   %v\n", e.NoNewPrivs)
	fmt.Fprintf(w, "  seccomp filter: %v\n", e.Seccomp)
	fmt.Fprintf(w, "  capabilities:   %s\n", e.Capabilities)
	ns := "no"
	if e.UserNamespace {
		ns = "yes (uid_map " + e.UIDMap + ")"
	}
	fmt.Fprintf(w, "  user namespace: %s\n", ns)
	if backend == BackendBwrap && !e.UserNamespace {
		fmt.Fprintln(w, "  warning: bwrap is claimed but this process is not in a user namespace")
	}
	return nil
}
