package resolve

import "grok-sandbox/launcher/config"

// hookProtected reports whether a built-in base applies global hook
// protection: every enforcing profile but devbox (meant for disposable VMs).
func hookProtected(base string) bool {
	return base == config.Workspace || base == config.ReadOnly || base == config.Strict
}

// restrictsNetwork is the built-in child-network rule.
func restrictsNetwork(base string) bool {
	return base == config.ReadOnly || base == config.Strict
}
