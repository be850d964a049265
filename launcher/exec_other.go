//go:build !darwin

package launcher

import "grok-sandbox/launcher/resolve"

func seatbeltArgv(plan *Plan) ([]string, error) {
	return nil, resolve.Refuse("Seatbelt profiles run only on macOS; use `grok-sandbox print --target darwin` to see one")
}
