//go:build !linux

package launcher

import (
	"fmt"
	"os"
)

// RunInit exists only on Linux, where the bwrap backend starts it.
func RunInit(args []string) int {
	fmt.Fprintln(os.Stderr, "grok-sandbox: init: only used inside a Linux sandbox")
	return ExitRefused
}
