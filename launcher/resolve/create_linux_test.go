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

// Two first launches at once both find a protected file missing; the one
// that creates it second takes what the first made (a real file or
// directory of the kind wanted), and still refuses a link or the wrong
// kind.
func TestCreateTakesConcurrentCreation(t *testing.T) {
	dir := t.TempDir()
	file, sub, link := filepath.Join(dir, "f"), filepath.Join(dir, "d"), filepath.Join(dir, "l")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if err := createEmpty(file, false, 0o600); err != nil {
		t.Errorf("an existing file: %v", err)
	}
	if err := createEmpty(sub, true, 0o700); err != nil {
		t.Errorf("an existing directory: %v", err)
	}
	if err := createEmpty(link, false, 0o600); err == nil {
		t.Error("a link was taken for the file")
	}
	if err := createEmpty(sub, false, 0o600); err == nil {
		t.Error("a directory was taken for a file")
	}
	if err := createEmpty(file, true, 0o700); err == nil {
		t.Error("a file was taken for a directory")
	}
}
