package config

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// TrustFile is GROK_HOME's record of the project files you trust (grok-sandbox
// help config: "Project profiles and trust"): each one's path and the SHA-256 of the
// content you trusted. A project file is read only while both match, so
// that a file a sandboxed command created or changed is never read by a
// later launch. Only `grok-sandbox trust`, outside any sandbox, writes it;
// every hook-protected profile makes it read-only.
const TrustFile = "trusted-projects.json"

// Untrusted is a project file that is there but is not read, and why.
type Untrusted struct {
	File string
	// Dir is the workspace: `grok-sandbox trust DIR` trusts the file.
	Dir    string
	Reason string
}

// Message is the one line a launch says about the file.
func (u *Untrusted) Message() string {
	return fmt.Sprintf("%s %s, so its profiles are not read: read it, then run `grok-sandbox trust %s`", u.File, u.Reason, shellWord(u.Dir))
}

// The reasons a project file is not read.
const (
	NotTrusted   = "is not trusted"
	Changed      = "changed since you trusted it"
	NotARealFile = "is not a regular file in a real .grok directory (a link, a FIFO or another kind of file)"
	HardLinked   = "has other hard links (a sandbox could change it through one of them): give it a link count of 1 (cp it to a new file and mv that over it)"
)

type trustRecord struct {
	Trusted []TrustEntry `json:"trusted"`
}

// TrustEntry is one trusted project file.
type TrustEntry struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Time   string `json:"time"`
}

// ReadProjectFile reads WORKSPACE/.grok/sandbox.toml without following a
// link at .grok or at the file and without blocking, and only when it is a
// regular file: ok is false when there is none. The bytes returned are
// the ones hashed and parsed, read once.
func ReadProjectFile(workspace string) (data []byte, ok bool, err error) {
	file := filepath.Join(workspace, ".grok", "sandbox.toml")
	dir, err := unix.Open(filepath.Join(workspace, ".grok"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, false, nil
	case errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
		// .grok is a link (never followed) or not a directory at all.
		if isLink(filepath.Dir(file)) {
			return nil, true, errNotReal
		}
		return nil, false, nil
	case err != nil:
		return nil, true, &Error{File: file, Msg: err.Error()}
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, "sandbox.toml", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, false, nil
	case errors.Is(err, unix.ELOOP):
		return nil, true, errNotReal
	case err != nil:
		return nil, true, &Error{File: file, Msg: err.Error()}
	}
	f := os.NewFile(uintptr(fd), file)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, true, &Error{File: file, Msg: err.Error()}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, true, errNotReal
	}
	if st.Nlink > 1 {
		return nil, true, errLinked
	}
	data, err = readLimited(file, f)
	return data, true, err
}

var (
	errNotReal = errors.New(NotARealFile)
	errLinked  = errors.New(HardLinked)
)

func isLink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

// Sum is the hex SHA-256 of a project file's content.
func Sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// loadProject reads the project file when it is trusted (or, for check,
// whatever its trust), and otherwise records why it is not read.
func (c *Config) loadProject(anyProject bool) (map[string]CustomProfile, error) {
	workspace := filepath.Dir(filepath.Dir(c.ProjectFile))
	data, ok, err := ReadProjectFile(workspace)
	switch {
	case !ok:
		return map[string]CustomProfile{}, nil
	case errors.Is(err, errNotReal), errors.Is(err, errLinked):
		c.Untrusted = &Untrusted{File: c.ProjectFile, Dir: workspace, Reason: err.Error()}
		return map[string]CustomProfile{}, nil
	case err != nil && anyProject:
		return nil, err
	}
	if !anyProject {
		reason := NotTrusted
		entries, terr := ReadTrust(c.GrokHome)
		if terr != nil {
			reason = fmt.Sprintf("is not trusted (the trust record cannot be read: %v)", terr)
		}
		if err == nil {
			for _, e := range entries {
				if e.File != c.ProjectFile {
					continue
				}
				if e.SHA256 == Sum(data) {
					reason = ""
				} else {
					reason = Changed
				}
			}
		}
		if reason != "" {
			c.Untrusted = &Untrusted{File: c.ProjectFile, Dir: workspace, Reason: reason}
			return map[string]CustomProfile{}, nil
		}
	}
	return parseProfiles(c.ProjectFile, data)
}

// ReadTrust reads GROK_HOME's trust record (none when it is missing or
// empty). It, and GROK_HOME, must be yours and writable by you alone:
// anybody else who could write either could trust a file for you.
func ReadTrust(grokHome string) ([]TrustEntry, error) {
	file := filepath.Join(grokHome, TrustFile)
	if msg := yoursAlone(grokHome); msg != "" {
		return nil, &Error{File: grokHome, Msg: msg + ", so the trust record in it is not used: chmod go-w it"}
	}
	f, err := Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	if msg := ownedAlone(st); msg != "" {
		return nil, &Error{File: file, Msg: msg + ", so it is not used: chmod 0600 it"}
	}
	data, err := readLimited(file, f)
	if err != nil || len(data) == 0 {
		return nil, err
	}
	var r trustRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &Error{File: filepath.Join(grokHome, TrustFile), Msg: "is not a trust record: " + err.Error()}
	}
	return r.Trusted, nil
}

// yoursAlone says what makes path another user's to change ("" when
// nothing does).
func yoursAlone(path string) string {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return err.Error()
	}
	return ownedAlone(st)
}

func ownedAlone(st unix.Stat_t) string {
	switch {
	case int(st.Uid) != os.Geteuid():
		return fmt.Sprintf("is owned by uid %d, not you", st.Uid)
	case st.Mode&0o022 != 0:
		return fmt.Sprintf("is writable by group or others (mode %04o)", st.Mode&0o7777)
	}
	return ""
}

// SetTrust records file as trusted with content sum (sum "" revokes it)
// and reports whether the record changed. The record is written whole
// under a fresh name in GROK_HOME and renamed over the old one, through a
// descriptor of GROK_HOME: a sandbox that can write GROK_HOME can plant
// nothing on the way.
func SetTrust(grokHome, file, sum string) (bool, error) {
	entries, err := ReadTrust(grokHome)
	if err != nil {
		return false, fmt.Errorf("%v (remove it to start a new record)", err)
	}
	before := len(entries)
	entries = slices.DeleteFunc(entries, func(e TrustEntry) bool { return e.File == file })
	changed := len(entries) != before
	if sum != "" {
		entries = append(entries, TrustEntry{File: file, SHA256: sum, Time: time.Now().UTC().Format(time.RFC3339)})
		changed = true
	}
	if !changed {
		return false, nil
	}
	slices.SortFunc(entries, func(a, b TrustEntry) int {
		switch {
		case a.File < b.File:
			return -1
		case a.File > b.File:
			return 1
		}
		return 0
	})
	data, err := json.MarshalIndent(trustRecord{Trusted: append([]TrustEntry{}, entries...)}, "", "  ")
	if err != nil {
		return false, err
	}
	data = append(data, '\n')
	dir, err := unix.Open(grokHome, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("%s: %w", grokHome, err)
	}
	defer unix.Close(dir)
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return false, err
	}
	tmp := "." + TrustFile + "." + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false, fmt.Errorf("%s: %w", filepath.Join(grokHome, tmp), err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dir, tmp, dir, TrustFile)
	}
	if werr != nil {
		unix.Unlinkat(dir, tmp, 0)
		return false, fmt.Errorf("%s: %w", filepath.Join(grokHome, TrustFile), werr)
	}
	return true, nil
}

// shellWord is s as one word for a POSIX shell.
func shellWord(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '_' || r == '-' || r == '+' || r == ',' || r == ':' || r == '@' || r == '%' || r == '=') {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	out := "'"
	for _, r := range s {
		if r == '\'' {
			out += `'\''`
		} else {
			out += string(r)
		}
	}
	return out + "'"
}

// ParseProjectFile checks the bytes of a project file as a launch would
// read them: its profiles, or its first error.
func ParseProjectFile(file string, data []byte) (map[string]CustomProfile, error) {
	return parseProfiles(file, data)
}
