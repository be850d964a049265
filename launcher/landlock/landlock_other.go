//go:build !linux

package landlock

import "errors"

// ABI is 0: Landlock is Linux only.
func ABI() int { return 0 }

// Apply fails: Landlock is Linux only.
func (r *Ruleset) Apply() error {
	return errors.New("landlock: not available on this system (Linux only)")
}
