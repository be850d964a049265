package verbs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func TestPagerChoice(t *testing.T) {
	less := func(string) (string, error) { return "/usr/bin/less", nil }
	noLess := func(string) (string, error) { return "", errors.New("not found") }
	for _, c := range []struct {
		vars     map[string]string
		lookPath func(string) (string, error)
		want     string
	}{
		{nil, less, "less"},
		{nil, noLess, ""},
		{map[string]string{"PAGER": ""}, less, ""},
		{map[string]string{"PAGER": "cat"}, less, ""},
		{map[string]string{"PAGER": "most -s"}, less, "most -s"},
	} {
		if got := pager(env(c.vars), c.lookPath); got != c.want {
			t.Errorf("PAGER %v: pager %q, want %q", c.vars, got, c.want)
		}
	}
}

// page hands the text to the pager on its standard input, with LESS=FRX
// when LESS is unset, and writes it as it is without a pager.
func TestPageThroughThePager(t *testing.T) {
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got := filepath.Join(dir, "paged")
	const text = "# Topic\n\nthe text\n"
	if err := page(out, text, env(map[string]string{"PAGER": `{ cat; echo "LESS=$LESS"; } > ` + got}), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(got); string(b) != text+"LESS=FRX\n" {
		t.Errorf("the pager got %q, want the text and LESS=FRX", b)
	}
	if err := page(out, text, env(map[string]string{"PAGER": "exit 3"}), nil); err == nil {
		t.Error("a pager that fails is not reported")
	}
	if err := page(out, text, env(map[string]string{"PAGER": "cat"}), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out.Name()); string(b) != text {
		t.Errorf("without a pager the output is %q, want the text", b)
	}
}
