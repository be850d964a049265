package resolve

import (
	"os"
	"path/filepath"
	"testing"
)

// A directory swapped for a link cannot redirect what the launcher creates
// for protection: the creation fails and nothing appears at the target.
func TestCreateEmptyRefusesLinkedDirectory(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(root, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "repo")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []bool{true, false} {
		if err := createEmpty(filepath.Join(root, "repo", "hooks"), dir, 0o755); err == nil {
			t.Errorf("createEmpty through a linked directory (dir=%v) succeeded", dir)
		}
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("created %v at the link's target", ents)
	}
	if err := createEmpty(filepath.Join(root, "f"), false, 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "f")); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 0 {
		t.Errorf("created file: %v, %v", fi, err)
	}
}
