package verbs

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"grok-sandbox/launcher"
	"grok-sandbox/launcher/printable"
)

// Help writes a help topic's text to w: through the pager when w is a
// terminal, as it is otherwise (a pipe, a file).
func Help(w io.Writer, text string) error {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(int(f.Fd())) {
		_, err := io.WriteString(w, text)
		return err
	}
	return page(f, text, os.LookupEnv, exec.LookPath)
}

// pager is the shell command text is paged through: $PAGER, as man and git
// take it (a command line for sh, "less -R" say); less when PAGER is unset
// and less is on PATH; none when PAGER is empty or cat.
func pager(lookupEnv func(string) (string, bool), lookPath func(string) (string, error)) string {
	p, ok := lookupEnv("PAGER")
	if !ok {
		if _, err := lookPath("less"); err == nil {
			return "less"
		}
		return ""
	}
	if p = strings.TrimSpace(p); p == "cat" {
		return ""
	}
	return p
}

// page runs the pager with text on its standard input and out as its
// output. LESS=FRX, when LESS is unset, as git sets it: less quits when the
// text fits on one screen, passes colours through and leaves the text on
// the terminal.
func page(out *os.File, text string, lookupEnv func(string) (string, bool), lookPath func(string) (string, error)) error {
	p := pager(lookupEnv, lookPath)
	if p == "" {
		_, err := io.WriteString(out, text)
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", p)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(text), out, os.Stderr
	if _, set := lookupEnv("LESS"); !set {
		cmd.Env = append(os.Environ(), "LESS=FRX")
	}
	if err := cmd.Run(); err != nil {
		return &launcher.ExitError{Code: launcher.ExitRefused, Err: fmt.Errorf("help: the pager %q failed: %v; PAGER=cat prints without one", printable.String(p), err)}
	}
	return nil
}
