//go:build !linux

package launcher

import (
	"grok-sandbox/launcher/landlock"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/resolve"
)

// LandlockABI is the kernel's Landlock ABI, 0 without Landlock.
func LandlockABI() int { return 0 }

func planLandlock(p *policy.Policy, abi int) (*landlock.Ruleset, error) {
	return nil, resolve.Refuse("Landlock exists only on Linux")
}

func runLandlock(plan *Plan, path string) error {
	return resolve.Refuse("Landlock exists only on Linux")
}
