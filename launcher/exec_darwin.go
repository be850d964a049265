package launcher

import (
	"errors"
	"os"
	"os/exec"
	"strconv"

	"golang.org/x/sys/unix"

	"grok-sandbox/launcher/resolve"
	"grok-sandbox/sbpl"
)

// maxInlineProfile is the largest profile passed with -p. macOS allows about
// 1 MiB of arguments and environment together; a larger profile goes through
// a descriptor.
const maxInlineProfile = 128 << 10

// seatbeltArgv prepares the sandbox-exec command line. A large profile is
// written to a file that is unlinked at once and handed over as /dev/fd/N,
// so nothing is left behind after the exec.
func seatbeltArgv(plan *Plan) ([]string, error) {
	if err := checkNotNested(); err != nil {
		return nil, err
	}
	argv := plan.Argv
	if len(plan.Seatbelt.Text) <= maxInlineProfile {
		return argv, nil
	}
	f, err := os.CreateTemp("", "grok-sandbox-*.sb")
	if err != nil {
		return nil, resolve.Refuse("cannot write the Seatbelt profile: %v", err)
	}
	os.Remove(f.Name())
	if _, err := f.WriteString(plan.Seatbelt.Text); err != nil {
		return nil, resolve.Refuse("cannot write the Seatbelt profile: %v", err)
	}
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return nil, resolve.Refuse("cannot hand over the Seatbelt profile: %v", err)
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return nil, resolve.Refuse("cannot rewind the Seatbelt profile: %v", err)
	}
	out := []string{sbpl.SandboxExec, "-f", "/dev/fd/" + strconv.Itoa(fd)}
	return append(out, argv[3:]...), nil
}

// checkNotNested refuses to start inside another Seatbelt sandbox, where
// sandbox-exec cannot apply a profile and fails with status 71.
func checkNotNested() error {
	err := exec.Command(sbpl.SandboxExec, "-p", "(version 1)(allow default)", "/usr/bin/true").Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 71 {
		return resolve.Refuse("already inside a Seatbelt sandbox (sandbox-exec exits 71): macOS cannot nest sandboxes; run grok-sandbox outside the other sandbox, or with --profile off inside it")
	}
	if err != nil {
		return resolve.Refuse("sandbox-exec does not work here: %v", err)
	}
	return nil
}
