package launcher

// The built-in profiles. Their exact rules are resolved in resolve.go and
// documented in the README; this file only names them.

const (
	Off       = "off"
	Workspace = "workspace"
	Devbox    = "devbox"
	ReadOnly  = "read-only"
	Strict    = "strict"
)

// Builtins lists the built-in profiles in the order people meet them.
var Builtins = []string{Off, Workspace, Devbox, ReadOnly, Strict}

// IsBuiltin reports whether name is a built-in profile or an alias of one.
func IsBuiltin(name string) bool {
	return canonicalBuiltin(name) != ""
}

// canonicalBuiltin maps an alias to its profile ("none" is off); "" when name
// is not built in.
func canonicalBuiltin(name string) string {
	if name == "none" {
		return Off
	}
	for _, b := range Builtins {
		if b == name {
			return b
		}
	}
	return ""
}

// hookProtected reports whether a built-in base applies global hook
// protection: every enforcing profile but devbox (meant for disposable VMs).
func hookProtected(base string) bool {
	return base == Workspace || base == ReadOnly || base == Strict
}

// restrictsNetwork is the built-in child-network rule.
func restrictsNetwork(base string) bool {
	return base == ReadOnly || base == Strict
}
