package launcher

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/resolve"
)

// BenchmarkPrepare measures everything run does before exec: locating the
// directories, reading config, resolving, the environment policy, finding
// bwrap and rendering the argv.
func BenchmarkPrepare(b *testing.B) {
	dir := b.TempDir()
	home, ws := filepath.Join(dir, "home"), filepath.Join(dir, "ws")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(ws, 0o755)
	environ := append(os.Environ(), "HOME="+home)
	for _, profile := range []string{config.Workspace, config.Strict} {
		b.Run(profile, func(b *testing.B) {
			inv := Invocation{Request: resolve.Request{Profile: profile, ProfileFrom: "--profile", Workspace: ws, Target: runtime.GOOS, Environ: environ}, Command: []string{"/bin/true"}}
			for i := 0; i < b.N; i++ {
				plan, err := Prepare(inv)
				if err != nil {
					b.Fatal(err)
				}
				if err := plan.Render(inv.Command, "/bin/true"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
