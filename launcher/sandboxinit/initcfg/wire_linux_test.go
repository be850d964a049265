package initcfg_test

import "grok-sandbox/launcher/sandboxinit/starter"

func init() {
	wired = append(wired, func() any { return &starter.Spec{} })
}
