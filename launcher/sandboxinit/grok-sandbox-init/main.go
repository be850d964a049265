// Command grok-sandbox-init is grok-sandbox's init stage built alone: the
// executable bwrap runs as pid 1 of the sandbox when it lies beside
// grok-sandbox and comes from the same build (see launcher/initbin). It
// runs nothing a user asks for directly.
package main

import (
	"fmt"
	"os"

	"grok-sandbox/launcher/sandboxinit"
	"grok-sandbox/launcher/sandboxinit/initcfg"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == initcfg.Command {
		os.Exit(sandboxinit.Run(os.Args[2:]))
	}
	fmt.Fprintln(os.Stderr, "grok-sandbox-init is grok-sandbox's init stage, started by grok-sandbox run inside the sandbox; run grok-sandbox instead")
	os.Exit(2)
}
