package verbs

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"grok-sandbox/launcher"
	"grok-sandbox/launcher/agents"
	"grok-sandbox/launcher/policy"
	"grok-sandbox/launcher/printable"
)

// Agents lists the agent table: how each agent is recognised, what state it
// gets writable and which of its files are protected.
func Agents(asJSON bool, w io.Writer) error {
	if asJSON {
		type state struct {
			Path string `json:"path"`
			Env  string `json:"env"`
			File bool   `json:"file"`
		}
		type agent struct {
			Name      string   `json:"name"`
			Title     string   `json:"title"`
			Package   string   `json:"package"`
			Native    []string `json:"native"`
			Program   []string `json:"program"`
			State     []state  `json:"state"`
			Protected []string `json:"protected"`
		}
		out := []agent{}
		for _, a := range agents.Table {
			j := agent{Name: a.Name, Title: a.Title, Package: a.Package, Native: nonNil(a.Native), Program: nonNil(a.Program), State: []state{}, Protected: []string{}}
			for _, s := range a.State {
				j.State = append(j.State, state{Path: s.Path, Env: s.Env, File: s.File})
			}
			for _, p := range a.Protected {
				j.Protected = append(j.Protected, filepath.Join(a.State[p.In].Path, p.Path))
			}
			out = append(out, j)
		}
		return writeJSON(w, map[string]any{"schema_version": launcher.SchemaVersion, "agents": out})
	}
	for i, a := range agents.Table {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s)\n", a.Name, a.Title)
		var from []string
		if a.Package != "" {
			from = append(from, "the npm package "+a.Package)
		}
		for _, n := range a.Native {
			from = append(from, "a native install under */"+strings.Trim(n, "/")+"/")
		}
		fmt.Fprintf(w, "  recognised from: %s\n", strings.Join(from, "; "))
		for _, s := range a.State {
			env := ""
			if s.Env != "" {
				env = " (or $" + s.Env + ")"
			}
			fmt.Fprintf(w, "  writable state:  %s%s\n", s.Path, env)
		}
		for _, p := range a.Protected {
			fmt.Fprintf(w, "  protected:       %s\n", filepath.Join(a.State[p.In].Path, p.Path))
		}
		if len(a.Program) > 0 {
			fmt.Fprintf(w, "  real program:    the package's %s (keeps the command's network under restrict_network)\n", filepath.Base(a.Program[0]))
		}
	}
	return nil
}

// explainAgent says which agent the run wraps and what that added.
func explainAgent(w io.Writer, p *policy.Policy) {
	a := p.Agent
	if a == nil {
		if p.Enforce {
			fmt.Fprintln(w, "\nagent: none recognised (name one with --agent NAME; `grok-sandbox agents` lists them)")
		}
		return
	}
	if a.Name != "" {
		fmt.Fprintf(w, "\nagent: %s (%s), %s\n", a.Name, a.Title, printable.String(a.By))
	} else {
		fmt.Fprintln(w, "\nagent: not in the table")
	}
	for _, s := range a.State {
		fmt.Fprintf(w, "  state, writable:  %s\n", printable.String(s))
	}
	for _, q := range p.Protected {
		if strings.HasPrefix(p.ProtectedWhy[q], a.Title+" configuration") {
			fmt.Fprintf(w, "  protected:        %s\n", printable.String(q))
		}
	}
	if p.Enforce && len(a.Env) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(a.Env)) {
			kv = append(kv, k+"="+a.Env[k])
		}
		fmt.Fprintf(w, "  environment:      %s\n", printable.String(strings.Join(kv, " ")))
	}
	if a.Mirror != "" {
		fmt.Fprintf(w, "  copy in use:      %s, of %s (its directory is read-only here; the newer of the two is copied over the other at every launch)\n", printable.String(a.Mirror), printable.String(a.MirrorOf))
	}
	if a.Program != "" {
		keeps := "gets the wrapped command's network: the first process the command starts that executes it, and no other"
		if !p.Network.RestrictChildren || p.Network.Isolate {
			keeps = "(the network rule does not tell it from the command here)"
		}
		fmt.Fprintf(w, "  real program:     %s (%s)\n    %s\n", printable.String(a.Program), printable.String(a.ProgramBy), keeps)
	}
}

// agentDoc is the agent for the JSON documents; nil (and the key left out)
// when there is none.
func agentDoc(p *policy.Policy) map[string]any {
	a := p.Agent
	if a == nil {
		return nil
	}
	var prot []string
	for _, q := range p.Protected {
		if a.Title != "" && strings.HasPrefix(p.ProtectedWhy[q], a.Title+" configuration") {
			prot = append(prot, q)
		}
	}
	return map[string]any{
		"name": a.Name, "title": a.Title, "chosen_by": a.By,
		"state": nonNil(a.State), "protected": nonNil(prot),
		"program": a.Program, "program_from": a.ProgramBy,
		"environment": envOrEmpty(p, a.Env), "mirror": a.Mirror, "mirror_of": a.MirrorOf,
	}
}

// envOrEmpty is what the agent table sets in the command's environment
// ({} where nothing is enforced: off sets nothing).
func envOrEmpty(p *policy.Policy, env map[string]string) map[string]string {
	if !p.Enforce || env == nil {
		return map[string]string{}
	}
	return env
}
