//go:build !darwin

package launcher

func seatbeltArgv(plan *Plan) ([]string, error) {
	return nil, refuse("Seatbelt profiles run only on macOS; use `grok-sandbox print --target darwin` to see one")
}
