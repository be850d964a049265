// Package initbin chooses the executable bwrap runs as grok-sandbox's init
// stage: grok-sandbox-init, a build of the init stage alone, where it lies
// beside the launcher's executable and comes from the very same build,
// else the launcher's own executable. Both run the same code; the smaller
// one starts in less time (it links none of the launcher's libraries: its
// CLI, TOML and help), and a launch starts it once, twice for an ordinary
// user (the command's starter is the same executable again). See the
// README's set-up and `grok-sandbox help backends`.
//
// "The same build" is decided from what Go records in every binary it
// builds (`go version -m`): the Go version, the module and every
// dependency with its checksum, and the build settings, among them the
// version control revision. That keeps out what is left behind by
// accident: a grok-sandbox-init of an earlier build beside a new
// grok-sandbox, or one of a developer's tree with uncommitted changes
// (whose record cannot say what it was built from: no grok-sandbox-init
// is used with such a launcher, unless the build vouches for itself with
// a StampTag). It is a record, not a proof: a builder can make two
// executables with equal records and different code (go build -overlay,
// git-ignored source files, -ldflags, which -trimpath builds do not
// record), as whoever can write beside grok-sandbox can replace
// grok-sandbox itself. What must agree for the launch to be sound, the
// config's layout, is checked again by the init stage itself
// (initcfg.Fingerprint), which refuses a config of another layout.
package initbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime/debug"
	"strings"
)

// Name is the init stage's own executable, looked for beside the
// launcher's.
const Name = "grok-sandbox-init"

// StampTag begins a build tag that vouches, where the version control
// revision cannot (no checkout, uncommitted changes: a packager's build,
// the test suite's), that builds with equal records come from the same
// source: both executables built in one command with
// -tags=...,grok_sandbox_build_VALUE, where VALUE changes whenever the
// source does. (A tag, not a -X linker flag: Go records the tags in every
// build, and the linker flags not in a -trimpath build.)
const StampTag = "grok_sandbox_build_"

// Pinned says whether bi, the launcher's own record, names its source
// exactly, and if not, why: only then can an equal record vouch for
// another executable.
func Pinned(bi *debug.BuildInfo) (bool, string) {
	var revision, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "-tags":
			for _, t := range strings.Split(s.Value, ",") {
				if strings.HasPrefix(t, StampTag) && len(t) > len(StampTag) {
					return true, ""
				}
			}
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	switch {
	case revision == "":
		return false, "this build records no version control revision (built from a source archive or a git worktree, without git installed, or with -buildvcs=false)"
	case modified != "false":
		return false, "this build is of a checkout with uncommitted changes"
	}
	return true, ""
}

// SameBuild says whether init, grok-sandbox-init's record, is of the same
// build as launcher's: the same Go, module and settings (the revision, the
// flags), and each module it links at the version and checksum the
// launcher links it at. The main package's path differs, and so does the
// list of modules: the init stage alone links fewer.
func SameBuild(launcher, init *debug.BuildInfo) bool {
	if launcher.GoVersion != init.GoVersion || !sameModule(&launcher.Main, &init.Main) || len(launcher.Settings) != len(init.Settings) {
		return false
	}
	for i, s := range launcher.Settings {
		if init.Settings[i] != s {
			return false
		}
	}
	deps := map[string]*debug.Module{}
	for _, d := range launcher.Deps {
		deps[d.Path] = d
	}
	for _, d := range init.Deps {
		if l, ok := deps[d.Path]; !ok || !sameModule(l, d) {
			return false
		}
	}
	return true
}

func sameModule(a, b *debug.Module) bool {
	if a.Path != b.Path || a.Version != b.Version || a.Sum != b.Sum || (a.Replace == nil) != (b.Replace == nil) {
		return false
	}
	return a.Replace == nil || sameModule(a.Replace, b.Replace)
}

// ELF layout: the file header's fields that locate the section headers,
// and a section header's size.
const (
	elfHeaderSize  = 64
	sectionHdrSize = 64
	// Bounds on what is read: grok-sandbox's executables have about 30
	// sections, and their build record takes a few kilobytes.
	maxSections    = 1024
	maxSectionRead = 1 << 20
)

// Read returns the build record of the ELF executable r (64-bit,
// little-endian: amd64 and arm64), read from its .go.buildinfo section, as
// Go 1.18 and later write it (the strings inline).
func Read(r io.ReaderAt) (*debug.BuildInfo, error) {
	var hdr [elfHeaderSize]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, err
	}
	if string(hdr[:4]) != "\x7fELF" || hdr[4] != 2 || hdr[5] != 1 {
		return nil, errors.New("not a 64-bit little-endian ELF file")
	}
	le := binary.LittleEndian
	shoff := le.Uint64(hdr[0x28:])
	shentsize, shnum, shstrndx := le.Uint16(hdr[0x3a:]), le.Uint16(hdr[0x3c:]), le.Uint16(hdr[0x3e:])
	if shentsize != sectionHdrSize || shnum == 0 || shnum > maxSections || shstrndx >= shnum {
		return nil, errors.New("unexpected ELF section headers")
	}
	shdrs := make([]byte, int(shnum)*sectionHdrSize)
	if _, err := r.ReadAt(shdrs, int64(shoff)); err != nil {
		return nil, err
	}
	section := func(i int) (name uint32, data []byte, err error) {
		h := shdrs[i*sectionHdrSize:]
		off, size := le.Uint64(h[24:]), le.Uint64(h[32:])
		if size > maxSectionRead || off > 1<<62 {
			return 0, nil, errors.New("ELF section too large")
		}
		data = make([]byte, size)
		if _, err := r.ReadAt(data, int64(off)); err != nil {
			return 0, nil, err
		}
		return le.Uint32(h[0:]), data, nil
	}
	_, names, err := section(int(shstrndx))
	if err != nil {
		return nil, err
	}
	for i := 0; i < int(shnum); i++ {
		h := shdrs[i*sectionHdrSize:]
		at := le.Uint32(h[0:])
		if int(at) >= len(names) {
			continue
		}
		name := names[at:]
		if end := bytes.IndexByte(name, 0); end < 0 || string(name[:end]) != ".go.buildinfo" {
			continue
		}
		_, data, err := section(i)
		if err != nil {
			return nil, err
		}
		return parseBuildInfo(data)
	}
	return nil, errors.New("no Go build record (.go.buildinfo)")
}

// buildInfoMagic begins the .go.buildinfo section; the flags byte after
// the pointer size says the strings follow inline (Go 1.18 and later).
const (
	buildInfoMagic     = "\xff Go buildinf:"
	buildInfoHeader    = 32
	buildInfoInline    = 0x2
	buildInfoSentinels = 16 // the linker's markers around the module record
)

func parseBuildInfo(data []byte) (*debug.BuildInfo, error) {
	if len(data) < buildInfoHeader || string(data[:len(buildInfoMagic)]) != buildInfoMagic {
		return nil, errors.New("no Go build record header")
	}
	if data[len(buildInfoMagic)+1]&buildInfoInline == 0 {
		return nil, errors.New("a Go build record of before Go 1.18")
	}
	rest := data[buildInfoHeader:]
	str := func() (string, bool) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return "", false
		}
		s := string(rest[k : k+int(n)])
		rest = rest[k+int(n):]
		return s, true
	}
	goVersion, ok1 := str()
	mod, ok2 := str()
	if !ok1 || !ok2 {
		return nil, errors.New("truncated Go build record")
	}
	if len(mod) >= 2*buildInfoSentinels+1 && mod[len(mod)-buildInfoSentinels-1] == '\n' {
		mod = mod[buildInfoSentinels : len(mod)-buildInfoSentinels]
	} else {
		return nil, errors.New("no module record in the Go build record")
	}
	bi, err := debug.ParseBuildInfo(mod)
	if err != nil {
		return nil, err
	}
	bi.GoVersion = goVersion
	return bi, nil
}
