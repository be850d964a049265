package config

import "strings"

// The built-in profiles' names. What each enforces is decided in
// launcher/resolve and documented in `grok-sandbox help profiles`; here they are only names,
// reserved so that no custom profile can take or imitate one.
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
	return CanonicalBuiltin(name) != ""
}

// CanonicalBuiltin maps an alias to its profile ("none" is off); "" when name
// is not built in.
func CanonicalBuiltin(name string) string {
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

// FoldName is name in lower case without white space: the form in which a
// look-alike of a built-in name ("STRICT", " strict", "off ") is recognised.
func FoldName(name string) string {
	return strings.ToLower(strings.Join(strings.Fields(name), ""))
}

// Suggest is the profile name among names (and the built-in ones) that
// name is most likely a misspelling of: within two edits ("stirct" for
// strict); "" when none is.
func Suggest(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range append(append([]string(nil), Builtins...), names...) {
		if n == name {
			continue
		}
		if d := EditDistance(FoldName(name), n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}
