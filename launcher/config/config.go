// Package config reads grok-sandbox's config files: GROK_HOME's
// sandbox.toml and config.toml and the project's .grok/sandbox.toml. It
// decides which files are read (regular files only, never through a link,
// at most MaxConfigSize), that every key is known and of its type, the
// file:line of every key and list entry (keylines.go), which custom profile
// names are valid (none may take or imitate a built-in one, profiles.go),
// how the global and project definitions merge (the global one wins; a
// difference is a Conflict), the default profile and the environment
// policy. It decides nothing about what a profile grants: that is
// launcher/resolve, which takes a Config as input.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/envpolicy"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/printable"
)

// Error is a problem in a config file. It always names the file and,
// where it can be found, the line and the key.
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
}

// Error is one line, whatever the file name, key or message hold.
func (e *Error) Error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Key != "" {
		return printable.String(fmt.Sprintf("%s: %s: %s", where, e.Key, e.Msg))
	}
	return printable.String(fmt.Sprintf("%s: %s", where, e.Msg))
}

// MaxProfileName is the longest custom profile name accepted.
const MaxProfileName = 64

// profileNamePattern is the documented form of a custom profile's name: it
// leaves no room for white space, upper case or control characters, so a
// name cannot pass for a built-in one ("STRICT", " strict") or carry
// terminal escapes into `profiles` and `doctor`.
var profileNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// CheckProfileName says what is wrong with a custom profile's name, or "".
// A built-in name itself is not wrong here: such a table is ignored with a
// warning (see Config.Shadowed).
func CheckProfileName(name string) string {
	if IsBuiltin(name) {
		return ""
	}
	folded := FoldName(name)
	if b := CanonicalBuiltin(folded); b != "" {
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
	// AllowHosts are the allow_hosts entries as written (each checked by
	// policy.ParseHostRule).
	AllowHosts []string
	// Agent names the agent the profile wraps ("" to recognise it from the
	// command, "none" for no agent); AgentExecutable the program that is
	// the real agent when the command is only its launcher.
	Agent           string
	AgentExecutable string
	// lines has the line of every key and list entry of the profile's
	// file, for errors and warnings about one entry.
	lines keyLines
}

// EntryLine is the line of the i-th entry of the profile's list key.
func (c CustomProfile) EntryLine(key string, i int) int {
	if l := c.lines.element([]string{"profiles", c.Name, key}, i); l > 0 {
		return l
	}
	return c.Line
}

// KeyLine is the line of one of the profile's keys.
func (c CustomProfile) KeyLine(key string) int {
	if l := c.lines.line("profiles", c.Name, key); l > 0 {
		return l
	}
	return c.Line
}

// same reports whether two definitions of a profile say the same thing.
func (c CustomProfile) same(o CustomProfile) bool {
	c.File, c.Line, o.File, o.Line = "", 0, "", 0
	c.lines, o.lines = nil, nil
	if c.Extends == "" {
		c.Extends = "workspace"
	}
	if o.Extends == "" {
		o.Extends = "workspace"
	}
	return reflect.DeepEqual(norm(c), norm(o))
}

func norm(c CustomProfile) CustomProfile {
	for _, l := range []*[]string{&c.ReadOnly, &c.ReadWrite, &c.Deny, &c.AllowHosts} {
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
	Env           envpolicy.Rules
	EnvConfigured bool
	// Requirements are the administrator's (nil when there is no
	// requirements file); Overridden the profiles of GROK_HOME or the
	// project that one of its profiles of the same name shadows.
	Requirements *Requirements
	Overridden   []Override
	// Untrusted is the project file when it is there but not read: it is
	// not trusted, or it changed since it was (see trust.go).
	Untrusted *Untrusted
}

// Override is a profile name that the administrator's requirements file
// defines, differently from GROK_HOME's or the project's file; the
// administrator's definition is the one used.
type Override struct {
	Name  string
	Admin CustomProfile
	User  CustomProfile
}

// Load reads the global, project and general config files. A missing
// file is no error; a malformed one is.
func Load(grokHome, workspace string) (*Config, error) {
	return load(grokHome, workspace, false)
}

// LoadUntrusted is Load that reads the project file whether or not it is
// trusted: for check, which only validates.
func LoadUntrusted(grokHome, workspace string) (*Config, error) {
	return load(grokHome, workspace, true)
}

func load(grokHome, workspace string, anyProject bool) (*Config, error) {
	req, err := LoadRequirements(requirementsPath)
	if err != nil {
		return nil, err
	}
	c := &Config{
		Requirements: req,
		GrokHome:     grokHome,
		GlobalFile:   filepath.Join(grokHome, "sandbox.toml"),
		ProjectFile:  filepath.Join(workspace, ".grok", "sandbox.toml"),
		GeneralFile:  filepath.Join(grokHome, "config.toml"),
		Profiles:     map[string]CustomProfile{},
		Env:          envpolicy.Default(),
	}
	global, err := loadProfiles(c.GlobalFile)
	if err != nil {
		return nil, err
	}
	project := map[string]CustomProfile{}
	if c.ProjectFile != c.GlobalFile {
		if project, err = c.loadProject(anyProject); err != nil {
			return nil, err
		}
	}
	for _, f := range []string{c.GlobalFile, c.ProjectFile} {
		if c.Untrusted != nil && f == c.ProjectFile {
			continue
		}
		if _, err := os.Stat(f); err == nil && !slices.Contains(c.Files, f) {
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
	if req != nil {
		for _, name := range sortedKeys(req.Profiles) {
			a := req.Profiles[name]
			for _, u := range []CustomProfile{global[name], project[name]} {
				if u.Name != "" && !a.same(u) {
					c.Overridden = append(c.Overridden, Override{Name: name, Admin: a, User: u})
				}
			}
			c.Profiles[name] = a
		}
		c.Files = append([]string{req.File}, c.Files...)
	}
	if err := c.loadGeneral(); err != nil {
		return nil, err
	}
	return c, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The TOML shapes of config.toml. Every value has a type of its own that
// checks itself, so that a wrong type is reported with the file, line and
// key by the decoder. sandbox.toml is decoded generically and checked by
// loadProfiles, which knows every key it may hold.
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

// tomlType names the TOML type of a decoded value for people.
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
	case []map[string]any:
		return "an array of tables ([[…]])"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a date or time"
	}
	return "a value of another type"
}

// Open opens a config file without following a link and without
// blocking, and refuses anything but a regular file: a sandbox that can
// write the workspace can create .grok/sandbox.toml, and a FIFO there would
// hang every later launch, a link would make the launcher read (and quote in
// its errors) a file the sandbox cannot see. The launcher reads its bwrap
// probe cache through it too, for the same reasons.
func Open(file string) (*os.File, error) {
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP {
		return nil, errors.New("is a symbolic link; config files are read only as regular files (a sandbox could plant a link): put the file itself there")
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: file, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, errors.New("is not a regular file; move it away")
	}
	return os.NewFile(uintptr(fd), file), nil
}

// MaxConfigSize is the largest config file grok-sandbox reads. Every launch
// parses the config files, and a real one is a few kilobytes: a file past
// this is refused rather than slowing every run.
const MaxConfigSize = 1 << 20

// decodeFile decodes one TOML file strictly: a syntax error, a wrong type and
// (for the keys in strictTables) an unknown key each fail with file:line.
func decodeFile(file string, v any, strictTables func(toml.Key) string) (keyLines, bool, error) {
	data, ok, err := readFile(file)
	if err != nil || !ok {
		return nil, ok, err
	}
	lines, err := decodeData(file, data, v, strictTables)
	return lines, true, err
}

// readFile reads a config file through Open, at most MaxConfigSize; ok is
// false when there is none.
func readFile(file string) ([]byte, bool, error) {
	f, err := Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, &Error{File: file, Msg: err.Error()}
	}
	defer f.Close()
	data, err := readLimited(file, f)
	return data, true, err
}

// readLimited reads an open config file, refusing one past MaxConfigSize.
func readLimited(file string, f io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	if len(data) > MaxConfigSize {
		return nil, &Error{File: file, Msg: fmt.Sprintf("is larger than %d KiB, the limit for a config file; a sandbox config is a few kilobytes: remove what does not belong there", MaxConfigSize>>10)}
	}
	return data, nil
}

// decodeData decodes the bytes of one TOML file strictly (see decodeFile).
func decodeData(file string, data []byte, v any, strictTables func(toml.Key) string) (keyLines, error) {
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		return nil, &Error{File: file, Line: 1, Msg: "is UTF-16 (it starts with a UTF-16 byte-order mark); TOML files must be UTF-8: save it as UTF-8"}
	}
	md, err := toml.Decode(string(data), v)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{File: file, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
		}
		return nil, &Error{File: file, Msg: err.Error()}
	}
	lines := scanKeyLines(data)
	for _, k := range md.Undecoded() {
		if msg := strictTables(k); msg != "" {
			return lines, &Error{File: file, Line: lines.line(k...), Key: k.String(), Msg: msg}
		}
	}
	return lines, nil
}

// byLine orders the keys of a table by the line they are written on, so
// that the first problem reported is the first in the file.
func byLine(m map[string]any, lines keyLines, table ...string) []string {
	keys := sortedKeys(m)
	at := make(map[string]int, len(keys))
	for _, k := range keys {
		at[k] = lines.line(append(table[:len(table):len(table)], k)...)
	}
	sort.SliceStable(keys, func(i, j int) bool { return at[keys[i]] < at[keys[j]] })
	return keys
}

// loadProfiles reads the [profiles.NAME] tables of one sandbox.toml. The
// first problem, in file order, refuses the file with one line naming the
// file, the line and the key.
func loadProfiles(file string) (map[string]CustomProfile, error) {
	data, ok, err := readFile(file)
	if err != nil || !ok {
		return map[string]CustomProfile{}, err
	}
	return parseProfiles(file, data)
}

// parseProfiles is loadProfiles on the bytes of the file.
func parseProfiles(file string, data []byte) (map[string]CustomProfile, error) {
	var raw map[string]any
	lines, err := decodeData(file, data, &raw, func(toml.Key) string { return "" })
	if err != nil {
		return nil, err
	}
	for _, k := range byLine(raw, lines) {
		if k != "profiles" {
			return nil, &Error{File: file, Line: lines.line(k), Key: toml.Key{k}.String(), Msg: "unknown key; sandbox.toml holds only [profiles.NAME] tables (see `grok-sandbox help config`)"}
		}
	}
	return profileTables(file, raw, lines)
}

// profileTables checks the [profiles.NAME] tables of a decoded file.
func profileTables(file string, raw map[string]any, lines keyLines) (map[string]CustomProfile, error) {
	fail := func(line int, key toml.Key, format string, args ...any) error {
		return &Error{File: file, Line: line, Key: key.String(), Msg: fmt.Sprintf(format, args...)}
	}
	out := map[string]CustomProfile{}
	v, present := raw["profiles"]
	if !present {
		return out, nil
	}
	tables, isTable := v.(map[string]any)
	if !isTable {
		return nil, fail(lines.line("profiles"), toml.Key{"profiles"}, "must be a table of profiles ([profiles.NAME] sections), not %s", tomlType(v))
	}
	for _, name := range byLine(tables, lines, "profiles") {
		key := toml.Key{"profiles", name}
		line := lines.line(key...)
		if msg := CheckProfileName(name); msg != "" {
			return nil, fail(line, key, "%s", msg)
		}
		t, isTable := tables[name].(map[string]any)
		if !isTable {
			return nil, fail(line, key, "must be a table ([profiles.%s] and its keys), not %s", name, tomlType(tables[name]))
		}
		p := CustomProfile{Name: name, File: file, Line: line, lines: lines}
		for _, k := range byLine(t, lines, key...) {
			kk := toml.Key{"profiles", name, k}
			kline := lines.line(kk...)
			switch v := t[k]; k {
			case "extends":
				s, isString := v.(string)
				switch {
				case !isString:
					return nil, fail(kline, kk, "must be a string, not %s", tomlType(v))
				case s == "":
					return nil, fail(kline, kk, "is empty; name the base profile (workspace, devbox, read-only or strict), or remove the key for workspace")
				}
				p.Extends = s
			case "restrict_network", "isolate_network":
				b, isBool := v.(bool)
				if !isBool {
					return nil, fail(kline, kk, "must be true or false, not %s", tomlType(v))
				}
				if k == "restrict_network" {
					p.RestrictNetwork = &b
				} else {
					p.IsolateNetwork = &b
				}
			case "agent", "agent_executable":
				s, isString := v.(string)
				switch {
				case !isString:
					return nil, fail(kline, kk, "must be a string, not %s", tomlType(v))
				case s == "":
					what := "the agent's program"
					if k == "agent" {
						what = "an agent (see `grok-sandbox agents`) or \"none\""
					}
					return nil, fail(kline, kk, "is empty; remove the key, or name %s", what)
				case strings.ContainsAny(s, "\n\r\x00"):
					return nil, fail(kline, kk, "must be one line")
				}
				if k == "agent" {
					p.Agent = s
				} else {
					p.AgentExecutable = s
				}
			case "allow_hosts":
				list, isList := v.([]any)
				if !isList {
					return nil, fail(kline, kk, "must be a list of strings, not %s", tomlType(v))
				}
				for i, x := range list {
					s, isString := x.(string)
					if !isString {
						return nil, fail(lines.element(kk, i), kk, "entry %d must be a string, not %s", i+1, tomlType(x))
					}
					if _, msg := policy.ParseHostRule(s); msg != "" {
						return nil, fail(lines.element(kk, i), kk, "entry %d (%s) %s", i+1, strconv.Quote(s), msg)
					}
					p.AllowHosts = append(p.AllowHosts, s)
				}
			case "read_only", "read_write", "deny":
				list, isList := v.([]any)
				if !isList {
					return nil, fail(kline, kk, "must be a list of strings, not %s", tomlType(v))
				}
				entries := make([]string, 0, len(list))
				for i, x := range list {
					s, isString := x.(string)
					if !isString {
						return nil, fail(lines.element(kk, i), kk, "entry %d must be a string, not %s", i+1, tomlType(x))
					}
					entries = append(entries, s)
				}
				switch k {
				case "read_only":
					p.ReadOnly = entries
				case "read_write":
					p.ReadWrite = entries
				default:
					p.Deny = entries
				}
			default:
				return nil, fail(kline, kk, "unknown key; check its spelling (`grok-sandbox help config` lists every key)")
			}
		}
		out[name] = p
	}
	return out, nil
}

// config.toml is grok's general config: only the tables grok-sandbox owns are
// checked strictly; the rest belongs to other programs.
func (c *Config) loadGeneral() error {
	var f generalFile
	// Other tables belong to other programs, but a near miss of one of
	// grok-sandbox's ([sandboxx], [Sandbox], a profile key outside any
	// table) would leave every run unsandboxed without a word: refused.
	strict := func(k toml.Key) string {
		switch {
		case len(k) == 0:
			return ""
		case k[0] == "sandbox" || k[0] == "shell_environment_policy":
			return "unknown key; check its spelling (`grok-sandbox help config` lists every key)"
		case len(k) == 1 && (strings.EqualFold(k[0], "profile") || nearMiss(k[0], "profile")):
			return "a key outside any table: the default profile is `profile` in the [sandbox] table ([sandbox] on the line above it)"
		case nearMiss(k[0], "sandbox"):
			return fmt.Sprintf("unknown table [%s]: did you mean [sandbox]? (grok-sandbox reads only [sandbox] and [shell_environment_policy] here)", k[0])
		case nearMiss(k[0], "shell_environment_policy"):
			return fmt.Sprintf("unknown table [%s]: did you mean [shell_environment_policy]?", k[0])
		}
		return ""
	}
	lines, ok, err := decodeFile(c.GeneralFile, &f, strict)
	if err != nil || !ok {
		return err
	}
	if !slices.Contains(c.Files, c.GeneralFile) {
		c.Files = append(c.Files, c.GeneralFile)
	}
	if f.Sandbox != nil && f.Sandbox.Profile != nil {
		c.Default = string(*f.Sandbox.Profile)
		c.DefaultLine = lines.line("sandbox", "profile")
		if c.Default == "" {
			return &Error{File: c.GeneralFile, Line: c.DefaultLine, Key: "sandbox.profile",
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
			// One line: the first problem, at its entry.
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				err = j.Unwrap()[0]
			}
			ce := &Error{File: c.GeneralFile, Line: lines.line("shell_environment_policy"),
				Key: "shell_environment_policy", Msg: err.Error()}
			var fe *envpolicy.FieldError
			if errors.As(err, &fe) {
				key := []string{"shell_environment_policy", fe.Key}
				ce.Key, ce.Line, ce.Msg = toml.Key(key).String(), lines.line(key...), fe.Msg
				if fe.Index >= 0 {
					ce.Line, ce.Msg = lines.element(key, fe.Index), fmt.Sprintf("entry %d %s", fe.Index+1, fe.Msg)
				}
			}
			return ce
		}
	}
	return nil
}

// nearMiss reports whether s is word misspelt: the same but for case, or
// within two edits (one for short words), and not word itself.
func nearMiss(s, word string) bool {
	if s == word {
		return false
	}
	if strings.EqualFold(s, word) {
		return true
	}
	max := 2
	if len(word) <= 4 {
		max = 1
	}
	return EditDistance(strings.ToLower(s), word) <= max
}

// EditDistance is the Levenshtein distance of a and b, in bytes: what the
// did-you-mean hints of flags, profile names and config tables measure.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
