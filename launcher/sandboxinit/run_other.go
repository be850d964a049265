//go:build !linux

package sandboxinit

import (
	"fmt"
	"os"

	"grok-sandbox/launcher/sandboxinit/initcfg"
)

// Run exists only on Linux, where the bwrap backend starts it.
func Run(args []string) int {
	fmt.Fprintln(os.Stderr, "grok-sandbox: init: only used inside a Linux sandbox")
	return initcfg.ExitRefused
}
