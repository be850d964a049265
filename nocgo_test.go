package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoC: the binary the README builds must not link cgo. Its
// init stage drops capabilities on every thread at once (AllThreadsSyscall,
// which a cgo binary cannot use) and goes on in the same process; linked
// with cgo it would re-exec itself instead, a Go program start more per
// launch (`grok-sandbox help performance`). A package that brings in cgo
// (net's resolver, os/user) shows here first.
func TestBinaryLinksNoC(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the binary's packages")
	}
	cmd := exec.Command(gobin, "list", "-tags", "urfave_cli_no_docs", "-deps", "-f", "{{.ImportPath}}", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list named %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		if d == "runtime/cgo" {
			t.Fatal("the binary links runtime/cgo: its init stage could not drop capabilities on every thread in place")
		}
	}
}
