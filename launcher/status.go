package launcher

import (
	"fmt"
	"os"
	"strings"

	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/eventlog"
	"grok-sandbox/launcher/printable"
	"grok-sandbox/launcher/sandboxinit/initcfg"
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

// initProfile is the profile on pid 1's command line when pid 1 is
// grok-sandbox's init stage. Nothing in the sandbox can change it: pid 1 is
// non-dumpable and /proc is read-only, so no process there can write its
// memory, and without capabilities none can make a pid namespace of its own
// (devbox, which allows user namespaces, is the exception: a process there
// could fake a pid 1 inside a nested namespace).
func initProfile() (string, bool) {
	data, err := os.ReadFile("/proc/1/cmdline")
	if err != nil {
		return "", false
	}
	f := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	if len(f) < 4 || f[1] != initcfg.Command {
		return "", false
	}
	return f[3], true
}

// insideGrokSandbox reports whether this process runs inside a sandbox that
// grok-sandbox made, by the kernel's evidence (no_new_privs and a filter)
// and the init stage as pid 1 (bwrap) or the variables a launch sets
// (Landlock); it says which.
func insideGrokSandbox() (string, bool) {
	r := CurrentStatus()
	if !r.Sandboxed {
		return "", false
	}
	return fmt.Sprintf("profile %s, backend %s", r.Profile, r.Backend), true
}

// StatusReport is what `status` says, and its JSON document.
type StatusReport struct {
	SchemaVersion int    `json:"schema_version"`
	Sandboxed     bool   `json:"sandboxed"`
	Profile       string `json:"profile,omitempty"`
	Backend       string `json:"backend,omitempty"`
	// ProfileFrom says where the profile claim comes from: pid 1's command
	// line (bwrap, unforgeable from inside) or the environment (Landlock,
	// which has no pid 1 of its own: only as good as the environment).
	ProfileFrom string `json:"profile_from,omitempty"`
	// Lie is set when the environment claims a sandbox the kernel does not
	// show, or another profile than pid 1's.
	Lie    string         `json:"lie,omitempty"`
	Kernel KernelEvidence `json:"kernel"`
	// Requirements is the administrator's requirements file when this
	// process can see one (every sandbox shows it read-only).
	Requirements string `json:"requirements,omitempty"`
}

// KernelEvidence is Evidence as the JSON document spells it.
type KernelEvidence struct {
	NoNewPrivs    bool   `json:"no_new_privs"`
	Seccomp       bool   `json:"seccomp"`
	Capabilities  string `json:"capabilities"`
	UserNamespace bool   `json:"user_namespace"`
	UIDMap        string `json:"uid_map"`
	Readable      bool   `json:"readable"`
}

// SchemaVersion is the version of the JSON documents of print, explain,
// status and the event log (grok-sandbox help json). It changes when a key
// changes meaning or goes away; added keys keep it.
const SchemaVersion = eventlog.SchemaVersion

// CurrentStatus is what holds the calling process, from evidence the
// sandbox cannot forge.
func CurrentStatus() StatusReport {
	e := ReadEvidence()
	r := StatusReport{SchemaVersion: SchemaVersion, Kernel: KernelEvidence{NoNewPrivs: e.NoNewPrivs, Seccomp: e.Seccomp,
		Capabilities: e.Capabilities, UserNamespace: e.UserNamespace, UIDMap: e.UIDMap, Readable: e.Readable}}
	if _, err := os.Stat(config.RequirementsFile()); err == nil {
		r.Requirements = config.RequirementsFile()
	}
	// What the environment says is anybody's to set: escape it before it
	// reaches a terminal.
	envProfile, envBackend := printable.String(os.Getenv("GROK_SANDBOX_PROFILE")), printable.String(os.Getenv("GROK_SANDBOX_BACKEND"))
	if p, ok := initProfile(); ok && e.Sandboxed() {
		p = printable.String(p)
		r.Sandboxed, r.Profile, r.Backend, r.ProfileFrom = true, p, BackendBwrap, "pid 1 (grok-sandbox's init stage)"
		if envProfile != "" && (envProfile != p || envBackend != BackendBwrap) {
			r.Lie = fmt.Sprintf("the environment claims profile %s, backend %s; pid 1 says profile %s, backend bwrap", envProfile, envBackend, p)
		}
		return r
	}
	if envProfile == "" {
		return r
	}
	if e.Readable && e.Sandboxed() && envBackend == BackendLandlock {
		r.Sandboxed, r.Profile, r.Backend = true, envProfile, envBackend
		r.ProfileFrom = "the environment (Landlock has no pid 1 to carry it; the kernel shows no_new_privs and a seccomp filter)"
		return r
	}
	r.Lie = fmt.Sprintf("the environment claims profile %s, backend %s, but the kernel shows no grok-sandbox sandbox", envProfile, envBackend)
	return r
}
