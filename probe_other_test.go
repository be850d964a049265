//go:build !linux

package main

import (
	"fmt"
	"os"
)

// probeMain drives the Linux real-kernel scripts; there are none elsewhere.
func probeMain() int {
	fmt.Fprintln(os.Stderr, "netprobe: Linux only")
	return 2
}
