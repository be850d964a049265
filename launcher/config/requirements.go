package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"golang.org/x/sys/unix"
)

// requirementsPath is the administrator's requirements file (grok-sandbox
// help managed). Nothing a user sets can move it: no variable, no
// flag. The package's own tests change it; the launcher's tests give the
// process a private /etc instead.
var requirementsPath = RequirementsFileFor(runtime.GOOS)

// RequirementsFileFor is where the requirements file of a host of os is.
// On macOS /etc is a link to /private/etc, and the file is read (and its
// ownership checked) on the real path.
func RequirementsFileFor(goos string) string {
	if goos == "darwin" {
		return "/private/etc/grok-sandbox/requirements.toml"
	}
	return "/etc/grok-sandbox/requirements.toml"
}

// RequirementsFile is this host's requirements file.
func RequirementsFile() string { return requirementsPath }

// Requirements is what the administrator's requirements file imposes on
// every launch: a default profile, the only profiles any source may choose,
// deny entries and the restricted child network forced onto every profile,
// and profiles of the administrator's own that shadow anybody else's.
type Requirements struct {
	File string
	// DefaultProfile is the profile when no flag, GROK_SANDBOX or
	// config.toml names one ("" for off).
	DefaultProfile string
	// Allowed lists the only profiles a launch may use (canonical: "none"
	// is off); nil allows every profile.
	Allowed []string
	// Deny entries are added to every launch's deny entries.
	Deny []string
	// RestrictNetwork forces restrict_network = true onto every profile.
	RestrictNetwork bool
	// Profiles are the administrator's [profiles.NAME] tables.
	Profiles map[string]CustomProfile
	lines    keyLines
}

// Line is the line of a key of the [requirements] table.
func (r *Requirements) Line(key string) int { return r.lines.line("requirements", key) }

// DenyLine is the line of the i-th deny entry.
func (r *Requirements) DenyLine(i int) int {
	return r.lines.element([]string{"requirements", "deny"}, i)
}

// Where is FILE:LINE of a key of the [requirements] table.
func (r *Requirements) Where(key string) string {
	return fmt.Sprintf("%s:%d", r.File, r.Line(key))
}

// Forces reports whether the requirements add anything to a sandbox (deny
// entries, the restricted child network), which off cannot apply.
func (r *Requirements) Forces() bool { return len(r.Deny) > 0 || r.RestrictNetwork }

// Admit says why the profile name may not be used here ("" when it may).
// by is who chose it.
func (r *Requirements) Admit(name, by string) string {
	key := name
	if b := CanonicalBuiltin(name); b != "" {
		key = b
	}
	if r.Allowed != nil && !slices.Contains(r.Allowed, key) {
		return fmt.Sprintf("profile %q (chosen by %s) is not allowed here: %s allows only %s", name, by, r.Where("allowed_profiles"), strings.Join(r.Allowed, ", "))
	}
	if key == Off && r.Forces() {
		return fmt.Sprintf("profile %q (chosen by %s) runs no sandbox, and %s requires one for every launch (%s): choose a profile with --profile", name, by, r.File, r.forced())
	}
	return ""
}

func (r *Requirements) forced() string {
	var what []string
	if len(r.Deny) > 0 {
		what = append(what, "deny at line "+fmt.Sprint(r.Line("deny")))
	}
	if r.RestrictNetwork {
		what = append(what, "restrict_network at line "+fmt.Sprint(r.Line("restrict_network")))
	}
	return strings.Join(what, ", ")
}

// LoadRequirements reads the requirements file at path: nil when there is
// none. It is honoured only when the file and every directory above it
// are root's and writable by root alone, and it is read without following
// a link; anything else, or any error in it, refuses every launch.
func LoadRequirements(path string) (*Requirements, error) {
	data, ok, err := readRequirements(path)
	if err != nil || !ok {
		return nil, err
	}
	return parseRequirements(path, data)
}

// ownershipHint is how an administrator makes the file trustworthy.
const ownershipHint = "the requirements are honoured only when the file and every directory above it are owned by root and writable by root alone"

func readRequirements(path string) ([]byte, bool, error) {
	refuse := func(at, format string, args ...any) error {
		return &Error{File: at, Msg: fmt.Sprintf(format, args...) + "; " + ownershipHint}
	}
	// No file, nothing to check: a launch in a user namespace where root
	// is not mapped (where / is nobody's) goes on as before.
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	// The directories first, from the root down: once each is root's and
	// writable by root alone, nobody else can change what the next name
	// leads to.
	dirs := []string{}
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == "/" {
			break
		}
	}
	slices.Reverse(dirs)
	for _, d := range dirs {
		var st unix.Stat_t
		err := unix.Lstat(d, &st)
		if errors.Is(err, unix.ENOENT) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, refuse(d, "cannot be examined: %v", err)
		}
		if msg := ownedByRoot(st, true); msg != "" {
			return nil, false, refuse(d, "%s", msg)
		}
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, false, nil
	case errors.Is(err, unix.ELOOP):
		return nil, false, refuse(path, "is a symbolic link; the file itself must be there")
	case errors.Is(err, unix.EACCES):
		return nil, false, &Error{File: path, Msg: "cannot be read (permission denied): every user's launches must read it, so make it readable by all (chmod 0644)"}
	case err != nil:
		return nil, false, refuse(path, "cannot be opened: %v", err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, refuse(path, "cannot be examined: %v", err)
	}
	if msg := ownedByRoot(st, false); msg != "" {
		return nil, false, refuse(path, "%s", msg)
	}
	data, err := readLimited(path, f)
	return data, true, err
}

// ownedByRoot says what keeps a file or directory from being the
// administrator's alone ("" when nothing does).
func ownedByRoot(st unix.Stat_t, dir bool) string {
	switch typ := st.Mode & unix.S_IFMT; {
	case dir && typ == unix.S_IFLNK:
		return "is a symbolic link; use the real directory"
	case dir && typ != unix.S_IFDIR:
		return "is not a directory"
	case !dir && typ != unix.S_IFREG:
		return "is not a regular file"
	case st.Uid != 0:
		return fmt.Sprintf("is owned by uid %d, not root", st.Uid)
	case st.Mode&0o022 != 0:
		return fmt.Sprintf("is writable by group or others (mode %04o)", st.Mode&0o7777)
	}
	return ""
}

func parseRequirements(file string, data []byte) (*Requirements, error) {
	var raw map[string]any
	lines, err := decodeData(file, data, &raw, func(toml.Key) string { return "" })
	if err != nil {
		return nil, err
	}
	r := &Requirements{File: file, Profiles: map[string]CustomProfile{}, lines: lines}
	fail := func(line int, key toml.Key, format string, args ...any) error {
		return &Error{File: file, Line: line, Key: key.String(), Msg: fmt.Sprintf(format, args...)}
	}
	for _, k := range byLine(raw, lines) {
		if k != "requirements" && k != "profiles" {
			return nil, fail(lines.line(k), toml.Key{k}, "unknown key; requirements.toml holds a [requirements] table and [profiles.NAME] tables (see `grok-sandbox help managed`)")
		}
	}
	if _, ok := raw["profiles"]; ok {
		profiles, err := profileTables(file, map[string]any{"profiles": raw["profiles"]}, lines)
		if err != nil {
			return nil, err
		}
		for _, name := range byLine(anyMap(profiles), lines, "profiles") {
			p := profiles[name]
			key := toml.Key{"profiles", name}
			if IsBuiltin(name) {
				return nil, fail(p.Line, key, "%q is a built-in profile's name; give the administrator's profile a name of its own", name)
			}
			ext := p.Extends
			if ext == "" {
				ext = Workspace
			}
			if b := CanonicalBuiltin(ext); b == "" || b == Off {
				return nil, fail(p.KeyLine("extends"), append(key, "extends"), "%q: an administrator's profile extends workspace, devbox, read-only or strict", ext)
			}
			r.Profiles[name] = p
		}
	}
	exists := func(name string) bool {
		_, admin := r.Profiles[name]
		return IsBuiltin(name) || admin
	}
	var (
		defaultKey toml.Key
		defaultSet bool
	)
	if v, ok := raw["requirements"]; ok {
		t, isTable := v.(map[string]any)
		if !isTable {
			return nil, fail(lines.line("requirements"), toml.Key{"requirements"}, "must be a table ([requirements] and its keys), not %s", tomlType(v))
		}
		for _, k := range byLine(t, lines, "requirements") {
			kk := toml.Key{"requirements", k}
			kline := lines.line(kk...)
			switch v := t[k]; k {
			case "default_profile":
				s, isString := v.(string)
				switch {
				case !isString:
					return nil, fail(kline, kk, "must be a string, not %s", tomlType(v))
				case s == "":
					return nil, fail(kline, kk, "is empty; name a profile, or remove the key for off")
				case !exists(s):
					return nil, fail(kline, kk, "%q is neither a built-in profile nor one of this file's [profiles]", s)
				}
				r.DefaultProfile, defaultKey, defaultSet = s, kk, true
			case "allowed_profiles", "deny":
				list, isList := v.([]any)
				if !isList {
					return nil, fail(kline, kk, "must be a list of strings, not %s", tomlType(v))
				}
				entries := []string{}
				for i, x := range list {
					s, isString := x.(string)
					if !isString {
						return nil, fail(lines.element(kk, i), kk, "entry %d must be a string, not %s", i+1, tomlType(x))
					}
					if k == "allowed_profiles" {
						if !exists(s) {
							return nil, fail(lines.element(kk, i), kk, "entry %d (%q) is neither a built-in profile nor one of this file's [profiles]: an allowed profile is one the administrator defines", i+1, s)
						}
						if b := CanonicalBuiltin(s); b != "" {
							s = b
						}
					}
					entries = append(entries, s)
				}
				if k == "deny" {
					r.Deny = entries
					break
				}
				if len(entries) == 0 {
					return nil, fail(kline, kk, "is empty, which would refuse every launch; list the profiles a launch may use, or remove the key to allow them all")
				}
				r.Allowed = entries
			case "restrict_network":
				b, isBool := v.(bool)
				switch {
				case !isBool:
					return nil, fail(kline, kk, "must be true, not %s", tomlType(v))
				case !b:
					return nil, fail(kline, kk, "only true is required of a profile; remove the key to leave each profile's own rule")
				}
				r.RestrictNetwork = true
			default:
				return nil, fail(kline, kk, "unknown key; [requirements] holds default_profile, allowed_profiles, deny and restrict_network (see `grok-sandbox help managed`)")
			}
		}
	}
	if r.Forces() && r.Allowed != nil && slices.Contains(r.Allowed, Off) {
		i := slices.Index(r.Allowed, Off)
		kk := toml.Key{"requirements", "allowed_profiles"}
		return nil, fail(lines.element(kk, i), kk, "off runs no sandbox, so it cannot apply this file's %s; remove off from the list", r.forced())
	}
	if defaultSet {
		d := r.DefaultProfile
		if b := CanonicalBuiltin(d); b != "" {
			d = b
		}
		if r.Allowed != nil && !slices.Contains(r.Allowed, d) {
			return nil, fail(lines.line(defaultKey...), defaultKey, "%q is not in allowed_profiles (line %d)", r.DefaultProfile, r.Line("allowed_profiles"))
		}
		if d == Off && r.Forces() {
			return nil, fail(lines.line(defaultKey...), defaultKey, "off runs no sandbox, so it cannot apply this file's %s; name a profile", r.forced())
		}
	}
	return r, nil
}

func anyMap[V any](m map[string]V) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
