//go:build !linux

package launcher

import (
	"grok-sandbox/launcher/landlock"
	"grok-sandbox/launcher/policy"
)

// LandlockABI is the kernel's Landlock ABI, 0 without Landlock.
func LandlockABI() int { return 0 }

func planLandlock(p *policy.Policy, abi int) (*landlock.Ruleset, error) {
	return nil, refuse("Landlock exists only on Linux")
}

func runLandlock(plan *Plan, path string) error { return refuse("Landlock exists only on Linux") }
