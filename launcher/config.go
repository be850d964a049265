package launcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"grok-sandbox/launcher/envpolicy"
)

// ConfigError is a problem in a config file. It always names the file and,
// where it can be found, the line and the key.
type ConfigError struct {
	File string
	Line int
	Key  string
	Msg  string
}

// Error is one line, whatever the file name, key or message hold.
func (e *ConfigError) Error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Key != "" {
		return Printable(fmt.Sprintf("%s: %s: %s", where, e.Key, e.Msg))
	}
	return Printable(fmt.Sprintf("%s: %s", where, e.Msg))
}

// MaxProfileName is the longest custom profile name accepted.
const MaxProfileName = 64

// profileNamePattern is the documented form of a custom profile's name: it
// leaves no room for white space, upper case or control characters, so a
// name cannot pass for a built-in one ("STRICT", " strict") or carry
// terminal escapes into `profiles` and `doctor`.
var profileNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// checkProfileName says what is wrong with a custom profile's name, or "".
// A built-in name itself is not wrong here: such a table is ignored with a
// warning (see Config.Shadowed).
func checkProfileName(name string) string {
	if IsBuiltin(name) {
		return ""
	}
	folded := strings.ToLower(strings.Join(strings.Fields(name), ""))
	if b := canonicalBuiltin(folded); b != "" {
		return fmt.Sprintf("%q looks like the built-in profile %q (built-in names are reserved in any case or spacing); rename the profile", name, folded)
	}
	if len(name) > MaxProfileName {
		return fmt.Sprintf("the name is longer than %d characters; use a shorter one", MaxProfileName)
	}
	if !profileNamePattern.MatchString(name) {
		return fmt.Sprintf("%q is not a valid profile name: use lower-case letters, digits, '.', '_' and '-', starting with a letter or digit", name)
	}
	return ""
}

// CustomProfile is one [profiles.NAME] table as written in a sandbox.toml.
type CustomProfile struct {
	Name            string
	File            string
	Line            int
	Extends         string // "" when omitted (means workspace)
	RestrictNetwork *bool  // nil: the base profile's rule
	IsolateNetwork  *bool
	ReadOnly        []string
	ReadWrite       []string
	Deny            []string
}

// same reports whether two definitions of a profile say the same thing.
func (c CustomProfile) same(o CustomProfile) bool {
	c.File, c.Line, o.File, o.Line = "", 0, "", 0
	if c.Extends == "" {
		c.Extends = "workspace"
	}
	if o.Extends == "" {
		o.Extends = "workspace"
	}
	return reflect.DeepEqual(norm(c), norm(o))
}

func norm(c CustomProfile) CustomProfile {
	for _, l := range []*[]string{&c.ReadOnly, &c.ReadWrite, &c.Deny} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return c
}

// Conflict is a profile name defined differently in the global and the
// project file; the global definition is the one used.
type Conflict struct {
	Name    string
	Global  CustomProfile
	Project CustomProfile
}

// Config is everything read from the config files of one run.
type Config struct {
	GrokHome      string
	GlobalFile    string // GROK_HOME/sandbox.toml
	ProjectFile   string // WORKSPACE/.grok/sandbox.toml
	GeneralFile   string // GROK_HOME/config.toml
	Files         []string
	Profiles      map[string]CustomProfile
	Conflicts     []Conflict
	Shadowed      []CustomProfile // custom profiles that take a built-in name: ignored
	Default       string          // [sandbox] profile
	DefaultLine   int
	Env           envpolicy.Policy
	EnvConfigured bool
}

// LoadConfig reads the global, project and general config files. A missing
// file is no error; a malformed one is.
func LoadConfig(grokHome, workspace string) (*Config, error) {
	c := &Config{
		GrokHome:    grokHome,
		GlobalFile:  filepath.Join(grokHome, "sandbox.toml"),
		ProjectFile: filepath.Join(workspace, ".grok", "sandbox.toml"),
		GeneralFile: filepath.Join(grokHome, "config.toml"),
		Profiles:    map[string]CustomProfile{},
		Env:         envpolicy.Default(),
	}
	global, err := loadProfiles(c.GlobalFile)
	if err != nil {
		return nil, err
	}
	project := map[string]CustomProfile{}
	if c.ProjectFile != c.GlobalFile {
		if project, err = loadProfiles(c.ProjectFile); err != nil {
			return nil, err
		}
	}
	for _, f := range []string{c.GlobalFile, c.ProjectFile} {
		if _, err := os.Stat(f); err == nil && !contains(c.Files, f) {
			c.Files = append(c.Files, f)
		}
	}
	for name, p := range global {
		c.Profiles[name] = p
	}
	for _, name := range sortedKeys(project) {
		p := project[name]
		g, ok := c.Profiles[name]
		if !ok {
			c.Profiles[name] = p
			continue
		}
		if !g.same(p) {
			c.Conflicts = append(c.Conflicts, Conflict{Name: name, Global: g, Project: p})
		}
	}
	for _, name := range sortedKeys(c.Profiles) {
		if IsBuiltin(name) {
			c.Shadowed = append(c.Shadowed, c.Profiles[name])
			delete(c.Profiles, name)
		}
	}
	if err := c.loadGeneral(); err != nil {
		return nil, err
	}
	return c, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The TOML shapes. Every value has a type of its own that checks itself, so
// that a wrong type is reported with the file, line and key by the decoder.
type sandboxFile struct {
	Profiles map[string]profileTable `toml:"profiles"`
}

type profileTable struct {
	Extends         *tomlString `toml:"extends"`
	RestrictNetwork *tomlBool   `toml:"restrict_network"`
	IsolateNetwork  *tomlBool   `toml:"isolate_network"`
	ReadOnly        tomlStrings `toml:"read_only"`
	ReadWrite       tomlStrings `toml:"read_write"`
	Deny            tomlStrings `toml:"deny"`
}

type generalFile struct {
	Sandbox *struct {
		Profile *tomlString `toml:"profile"`
	} `toml:"sandbox"`
	Env *struct {
		Inherit               *tomlString   `toml:"inherit"`
		IgnoreDefaultExcludes *tomlBool     `toml:"ignore_default_excludes"`
		Exclude               tomlStrings   `toml:"exclude"`
		IncludeOnly           tomlStrings   `toml:"include_only"`
		Set                   tomlStringMap `toml:"set"`
	} `toml:"shell_environment_policy"`
}

type tomlString string

func (s *tomlString) UnmarshalTOML(v any) error {
	str, ok := v.(string)
	if !ok {
		return fmt.Errorf("must be a string, not %s", tomlType(v))
	}
	*s = tomlString(str)
	return nil
}

type tomlBool bool

func (b *tomlBool) UnmarshalTOML(v any) error {
	x, ok := v.(bool)
	if !ok {
		return fmt.Errorf("must be true or false, not %s", tomlType(v))
	}
	*b = tomlBool(x)
	return nil
}

type tomlStrings []string

func (l *tomlStrings) UnmarshalTOML(v any) error {
	arr, ok := v.([]any)
	if !ok {
		return fmt.Errorf("must be a list of strings, not %s", tomlType(v))
	}
	out := make([]string, 0, len(arr))
	for i, x := range arr {
		s, ok := x.(string)
		if !ok {
			return fmt.Errorf("entry %d must be a string, not %s", i+1, tomlType(x))
		}
		out = append(out, s)
	}
	*l = out
	return nil
}

type tomlStringMap map[string]string

func (m *tomlStringMap) UnmarshalTOML(v any) error {
	tbl, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("must be a table of strings, not %s", tomlType(v))
	}
	out := map[string]string{}
	for k, x := range tbl {
		s, ok := x.(string)
		if !ok {
			return fmt.Errorf("value of %q must be a string, not %s", k, tomlType(x))
		}
		out[k] = s
	}
	*m = out
	return nil
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case []any:
		return "a list"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

// decodeFile decodes one TOML file strictly: a syntax error, a wrong type and
// (for the keys in strictTables) an unknown key each fail with file:line.
func decodeFile(file string, v any, strictTables func(toml.Key) bool) (toml.MetaData, []byte, bool, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return toml.MetaData{}, nil, false, nil
	}
	if err != nil {
		return toml.MetaData{}, nil, false, &ConfigError{File: file, Msg: err.Error()}
	}
	md, err := toml.Decode(string(data), v)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return md, data, true, &ConfigError{File: file, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
		}
		return md, data, true, &ConfigError{File: file, Msg: err.Error()}
	}
	for _, k := range md.Undecoded() {
		if strictTables(k) {
			return md, data, true, &ConfigError{File: file, Line: keyLine(data, k), Key: k.String(),
				Msg: "unknown key; check its spelling (see the README for every key)"}
		}
	}
	return md, data, true, nil
}

func loadProfiles(file string) (map[string]CustomProfile, error) {
	var f sandboxFile
	_, data, ok, err := decodeFile(file, &f, func(toml.Key) bool { return true })
	if err != nil || !ok {
		return map[string]CustomProfile{}, err
	}
	out := map[string]CustomProfile{}
	for _, name := range sortedKeys(f.Profiles) {
		t := f.Profiles[name]
		if msg := checkProfileName(name); msg != "" {
			key := toml.Key{"profiles", name}
			return nil, &ConfigError{File: file, Line: keyLine(data, key), Key: key.String(), Msg: msg}
		}
		p := CustomProfile{
			Name:      name,
			File:      file,
			Line:      keyLine(data, toml.Key{"profiles", name}),
			ReadOnly:  t.ReadOnly,
			ReadWrite: t.ReadWrite,
			Deny:      t.Deny,
		}
		if t.Extends != nil {
			p.Extends = string(*t.Extends)
		}
		if t.RestrictNetwork != nil {
			b := bool(*t.RestrictNetwork)
			p.RestrictNetwork = &b
		}
		if t.IsolateNetwork != nil {
			b := bool(*t.IsolateNetwork)
			p.IsolateNetwork = &b
		}
		out[name] = p
	}
	return out, nil
}

// config.toml is grok's general config: only the tables grok-sandbox owns are
// checked strictly; the rest belongs to other programs.
func (c *Config) loadGeneral() error {
	var f generalFile
	strict := func(k toml.Key) bool {
		return len(k) > 0 && (k[0] == "sandbox" || k[0] == "shell_environment_policy")
	}
	_, data, ok, err := decodeFile(c.GeneralFile, &f, strict)
	if err != nil || !ok {
		return err
	}
	if !contains(c.Files, c.GeneralFile) {
		c.Files = append(c.Files, c.GeneralFile)
	}
	if f.Sandbox != nil && f.Sandbox.Profile != nil {
		c.Default = string(*f.Sandbox.Profile)
		c.DefaultLine = keyLine(data, toml.Key{"sandbox", "profile"})
		if c.Default == "" {
			return &ConfigError{File: c.GeneralFile, Line: c.DefaultLine, Key: "sandbox.profile",
				Msg: "is empty; name a profile or remove the key"}
		}
	}
	if f.Env != nil {
		c.EnvConfigured = true
		e := f.Env
		if e.Inherit != nil {
			c.Env.Inherit = string(*e.Inherit)
		}
		if e.IgnoreDefaultExcludes != nil {
			c.Env.IgnoreDefaultExcludes = bool(*e.IgnoreDefaultExcludes)
		}
		c.Env.Exclude = e.Exclude
		c.Env.IncludeOnly = e.IncludeOnly
		c.Env.Set = e.Set
		if err := c.Env.Validate(); err != nil {
			return &ConfigError{File: c.GeneralFile, Line: keyLine(data, toml.Key{"shell_environment_policy"}),
				Key: "shell_environment_policy", Msg: err.Error()}
		}
	}
	return nil
}

// keyLine finds the line that defines key: the decoder does not export key
// positions, so look for the table header or the "name =" line inside the
// right table. 0 when it cannot be found.
func keyLine(data []byte, key toml.Key) int {
	if len(key) == 0 {
		return 0
	}
	lines := strings.Split(string(data), "\n")
	quoteAny := func(s string) string {
		return `(?:` + regexp.QuoteMeta(s) + `|"` + regexp.QuoteMeta(s) + `"|'` + regexp.QuoteMeta(s) + `')`
	}
	dotted := func(k toml.Key) string {
		parts := make([]string, len(k))
		for i, s := range k {
			parts[i] = quoteAny(s)
		}
		return strings.Join(parts, `\s*\.\s*`)
	}
	header := regexp.MustCompile(`^\s*\[\s*` + dotted(key) + `\s*\]`)
	for i, l := range lines {
		if header.MatchString(l) {
			return i + 1
		}
	}
	// "name = …" inside [parent], or a dotted "parent.name = …" at the top.
	for split := len(key) - 1; split >= 0; split-- {
		table, rest := key[:split], key[split:]
		assign := regexp.MustCompile(`^\s*` + dotted(rest) + `\s*=`)
		in := split == 0
		var tableRe *regexp.Regexp
		if split > 0 {
			tableRe = regexp.MustCompile(`^\s*\[\s*` + dotted(table) + `\s*\]`)
		}
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "[") {
				in = split == 0 || tableRe.MatchString(l)
				if split == 0 {
					in = false
				}
				continue
			}
			if in && assign.MatchString(l) {
				return i + 1
			}
		}
	}
	return 0
}
