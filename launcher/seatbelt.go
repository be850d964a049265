package launcher

import (
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/resolve"
	"grok-sandbox/sbpl"
)

// renderSeatbelt fills in the sandbox-exec argv for the plan's policy.
func (plan *Plan) renderSeatbelt(command []string) error {
	s, err := sbpl.Render(plan.Policy)
	if err != nil {
		return resolve.Refuse("cannot render the Seatbelt profile: %v", err)
	}
	plan.Seatbelt = &s
	plan.Argv = s.Args(command)
	return nil
}

// RenderNotes are the places where macOS enforces less than the policy asks.
func RenderNotes(p *policy.Policy) ([]string, error) {
	s, err := sbpl.Render(p)
	if err != nil {
		return nil, err
	}
	return s.Notes, nil
}
