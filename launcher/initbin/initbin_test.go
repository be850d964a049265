package initbin

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// Read finds in an executable the record the Go runtime reads of itself:
// this test binary's, read from its file, equals what debug.ReadBuildInfo
// says inside it.
func TestReadAgreesWithTheRuntime(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("Read reads 64-bit little-endian ELF executables, not %s/%s's", runtime.GOOS, runtime.GOARCH)
	}
	own, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information in the test binary")
	}
	got, err := Read(bytes.NewReader(testExecutable(t)))
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != own.String() {
		t.Errorf("Read:\n%s\nthe runtime:\n%s", got, own)
	}
	if !SameBuild(own, got) {
		t.Error("SameBuild of a record and itself is false")
	}
}

// Anything that is not a well-formed executable is an error, never a
// panic or a record: the start of a real one cut anywhere, a 32-bit or
// big-endian header, absurd section tables.
func TestReadRefusesMalformed(t *testing.T) {
	whole := testExecutable(t)
	for _, n := range []int{0, 3, 16, 63, 64, 65, 4096, len(whole) / 2, len(whole) - 1} {
		if bi, err := Read(bytes.NewReader(whole[:n])); err == nil {
			t.Errorf("the first %d bytes: a record %v", n, bi)
		}
	}
	hdr := func(edit func(h []byte)) []byte {
		h := bytes.Clone(whole[:4096])
		edit(h)
		return h
	}
	for name, b := range map[string][]byte{
		"not ELF":            []byte("#!/bin/sh\necho hello\n"),
		"32-bit":             hdr(func(h []byte) { h[4] = 1 }),
		"big-endian":         hdr(func(h []byte) { h[5] = 2 }),
		"no sections":        hdr(func(h []byte) { h[0x3c], h[0x3d] = 0, 0 }),
		"65535 sections":     hdr(func(h []byte) { h[0x3c], h[0x3d] = 0xff, 0xff }),
		"odd header size":    hdr(func(h []byte) { h[0x3a] = 40 }),
		"names out of range": hdr(func(h []byte) { h[0x3e], h[0x3f] = 0xff, 0 }),
		"headers past the end": hdr(func(h []byte) {
			for i := 0x28; i < 0x30; i++ {
				h[i] = 0x7f
			}
		}),
	} {
		if bi, err := Read(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: a record %v", name, bi)
		}
	}
	for name, sec := range map[string]string{
		"no magic":       "\x00 Go buildinf:\x08\x02" + string(make([]byte, 16)) + "\x01x\x01y",
		"pointer format": buildInfoMagic + "\x08\x00" + string(make([]byte, 16)),
		"truncated":      buildInfoMagic + "\x08\x02" + string(make([]byte, 16)) + "\x08go1",
		"no sentinels":   buildInfoMagic + "\x08\x02" + string(make([]byte, 16)) + "\x06go1.26\x05path\n",
	} {
		if bi, err := parseBuildInfo([]byte(sec)); err == nil {
			t.Errorf("%s: a record %v", name, bi)
		}
	}
}

// testExecutable is this test binary's file.
func testExecutable(t *testing.T) []byte {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func record(rev, modified, tags string, deps ...*debug.Module) *debug.BuildInfo {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Path:      "grok-sandbox",
		Main:      debug.Module{Path: "grok-sandbox", Version: "(devel)"},
		Deps:      deps,
		Settings:  []debug.BuildSetting{{Key: "-tags", Value: tags}, {Key: "CGO_ENABLED", Value: "0"}},
	}
	if rev != "" {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.revision", Value: rev}, debug.BuildSetting{Key: "vcs.modified", Value: modified})
	}
	return bi
}

func TestPinned(t *testing.T) {
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want bool
	}{
		{"a clean checkout", record("abc123", "false", "urfave_cli_no_docs"), true},
		{"uncommitted changes", record("abc123", "true", "urfave_cli_no_docs"), false},
		{"no revision", record("", "", "urfave_cli_no_docs"), false},
		{"no revision, a stamp", record("", "", "urfave_cli_no_docs,grok_sandbox_build_1.2-3"), true},
		{"uncommitted changes, a stamp", record("abc123", "true", "grok_sandbox_build_x"), true},
		{"an empty stamp", record("", "", "grok_sandbox_build_"), false},
		{"a stamp's prefix inside another tag", record("", "", "my_grok_sandbox_build_x"), false},
	} {
		if got, why := Pinned(c.bi); got != c.want || got != (why == "") {
			t.Errorf("%s: Pinned = %v (%q), want %v", c.name, got, why, c.want)
		}
	}
}

func TestSameBuild(t *testing.T) {
	toml := &debug.Module{Path: "github.com/BurntSushi/toml", Version: "v1.6.0", Sum: "h1:a"}
	sys := &debug.Module{Path: "golang.org/x/sys", Version: "v0.50.0", Sum: "h1:b"}
	launcher := record("abc", "false", "t", toml, sys)
	init := func(edit func(bi *debug.BuildInfo)) *debug.BuildInfo {
		bi := record("abc", "false", "t", &debug.Module{Path: "golang.org/x/sys", Version: "v0.50.0", Sum: "h1:b"})
		bi.Path = "grok-sandbox/launcher/sandboxinit/grok-sandbox-init"
		if edit != nil {
			edit(bi)
		}
		return bi
	}
	if !SameBuild(launcher, init(nil)) {
		t.Error("the init stage of the same build, with fewer modules: not the same build")
	}
	for name, edit := range map[string]func(bi *debug.BuildInfo){
		"another revision": func(bi *debug.BuildInfo) { bi.Settings[2].Value = "abd" },
		"another tag":      func(bi *debug.BuildInfo) { bi.Settings[0].Value = "u" },
		"cgo":              func(bi *debug.BuildInfo) { bi.Settings[1].Value = "1" },
		"a setting more": func(bi *debug.BuildInfo) {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "-race", Value: "true"})
		},
		"another Go":          func(bi *debug.BuildInfo) { bi.GoVersion = "go1.26.7" },
		"another module":      func(bi *debug.BuildInfo) { bi.Main.Path = "example.com/other" },
		"a module's version":  func(bi *debug.BuildInfo) { bi.Deps[0].Version = "v0.49.0" },
		"a module's checksum": func(bi *debug.BuildInfo) { bi.Deps[0].Sum = "h1:c" },
		"a module replaced":   func(bi *debug.BuildInfo) { bi.Deps[0].Replace = &debug.Module{Path: "../sys"} },
		"a module it lacks": func(bi *debug.BuildInfo) {
			bi.Deps = append(bi.Deps, &debug.Module{Path: "example.com/m", Version: "v1"})
		},
		"the main module's sum": func(bi *debug.BuildInfo) { bi.Main.Sum = "h1:d" },
	} {
		if SameBuild(launcher, init(edit)) {
			t.Errorf("%s: the same build", name)
		}
	}
}
