package launcher

import (
	"runtime"

	"grok-sandbox/launcher/landlock"
	"grok-sandbox/launcher/policy"
)

func landlockABI() int { return landlock.ABI() }

func planLandlock(p *policy.Policy, abi int) (*landlock.Ruleset, error) {
	return landlock.Plan(p, abi)
}

// runLandlock is the Landlock backend: this process restricts the thread
// that starts the command (no capabilities, then the ruleset), adds the
// seccomp filter, and execs the command, or supervises it when its children
// must lose the network. It returns only on failure or with the supervised
// command's status.
func runLandlock(plan *Plan) error {
	p := plan.Policy
	runtime.LockOSThread()
	cfg := &initConfig{Profile: p.Profile, GrokHome: p.GrokHome, Network: networkMode(p), NoUserNS: !p.NestedUserNS}
	restrict := func() error {
		if err := dropAllCapabilities(); err != nil {
			return err
		}
		return plan.Landlock.Apply()
	}
	code := startCommand(cfg, BackendLandlock, restrict, plan.Argv, plan.Environ.Env)
	return &ExitError{Code: code}
}
