package resolve

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"grok-sandbox/launcher/policy"
)

// newGitFixture makes a writable workspace holding a repository with a
// .git directory, hooks/, info/ and config, and a protector for it.
func newGitFixture(t *testing.T, git string) (*gitProtector, string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".git/hooks", ".git/info", ".git/objects", ".git/refs"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(ws, ".git/HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(ws, ".git/config"), "[core]\n\tbare = false\n")
	p := &policy.Policy{ReadAll: true, Grants: []policy.Grant{{Path: ws, Access: policy.Write}}}
	pr := &protector{p: p, t: target{os: "linux", host: true}, why: map[string]string{}}
	return &gitProtector{protector: pr, env: Dirs{Home: ws}, git: git, seen: map[string]bool{}}, ws
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Everything a sandbox could swap to make git run its code, and that a
// mount cannot hold in place, refuses the run; so does what cannot be read
// with certainty.
func TestGitProtectionRefuses(t *testing.T) {
	cases := []struct {
		name  string
		git   string
		setup func(t *testing.T, ws string)
		want  string
	}{
		{"symlinked .git", "", func(t *testing.T, ws string) {
			os.Rename(filepath.Join(ws, ".git"), filepath.Join(ws, "real.git"))
			os.Symlink("real.git", filepath.Join(ws, ".git"))
		}, ".git is a symlink"},
		{"symlinked hooks", "", func(t *testing.T, ws string) {
			os.Remove(filepath.Join(ws, ".git/hooks"))
			os.Mkdir(filepath.Join(ws, "hooks-real"), 0o755)
			os.Symlink("../hooks-real", filepath.Join(ws, ".git/hooks"))
		}, "hooks is a symlink"},
		{"symlinked config", "", func(t *testing.T, ws string) {
			os.Rename(filepath.Join(ws, ".git/config"), filepath.Join(ws, "cfg"))
			os.Symlink("../cfg", filepath.Join(ws, ".git/config"))
		}, "config is a symlink"},
		{"commondir in a main .git", "", func(t *testing.T, ws string) {
			write(t, filepath.Join(ws, ".git/commondir"), "/tmp/evil\n")
		}, "commondir exists in a repository that is no linked worktree"},
		{"commondir in a submodule gitdir", "", func(t *testing.T, ws string) {
			os.MkdirAll(filepath.Join(ws, ".git/modules/sub/refs"), 0o755)
			write(t, filepath.Join(ws, ".git/modules/sub/HEAD"), "ref: refs/heads/main\n")
			write(t, filepath.Join(ws, ".git/modules/sub/config"), "")
			write(t, filepath.Join(ws, ".git/modules/sub/commondir"), "/tmp/evil\n")
		}, "commondir exists in a repository that is no linked worktree"},
		{".git file naming a missing repository the sandbox could create", "", func(t *testing.T, ws string) {
			os.RemoveAll(filepath.Join(ws, ".git"))
			write(t, filepath.Join(ws, ".git"), "gitdir: gone\n")
		}, "no such file or directory"},
		{"malformed .git file", "", func(t *testing.T, ws string) {
			os.RemoveAll(filepath.Join(ws, ".git"))
			write(t, filepath.Join(ws, ".git"), "not a gitdir line\n")
		}, "is not a \"gitdir: PATH\" file"},
		{".git file through a replaceable link", "", func(t *testing.T, ws string) {
			os.Rename(filepath.Join(ws, ".git"), filepath.Join(ws, "store"))
			os.Symlink("store", filepath.Join(ws, "link"))
			write(t, filepath.Join(ws, ".git"), "gitdir: link\n")
		}, "has a symlink that a sandbox could replace"},
		{"hooksPath without git to read it", "", func(t *testing.T, ws string) {
			write(t, filepath.Join(ws, ".git/config"), "[core]\n\thooksPath = .husky\n")
		}, "sets hookspath, and no git was found"},
		{"an include without git to read it", "", func(t *testing.T, ws string) {
			write(t, filepath.Join(ws, ".git/config"), "[include]\n\tpath = ../x\n")
		}, "sets include, and no git was found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, ws := newGitFixture(t, c.git)
			c.setup(t, ws)
			err := g.workTree(ws)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("workTree = %v; want an error containing %q", err, c.want)
			}
		})
	}
}

// Without git, a plain repository is protected all the same, and missing
// hooks/ and info/ are created as real directories.
func TestGitProtectionWithoutGit(t *testing.T) {
	g, ws := newGitFixture(t, "")
	os.Remove(filepath.Join(ws, ".git/hooks"))
	os.Remove(filepath.Join(ws, ".git/info"))
	if err := g.workTree(ws); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hooks", "info", "config"} {
		path := filepath.Join(ws, ".git", name)
		if _, ok := g.why[path]; !ok {
			t.Errorf("%s is not protected; protected: %v", path, g.paths)
		}
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("%s: %v, %v", path, fi, err)
		}
	}
}

// A repository the policy does not let the sandbox write needs nothing.
func TestGitProtectionSkipsReadOnlyRepository(t *testing.T) {
	g, ws := newGitFixture(t, "")
	g.p.Grants = nil
	if err := g.workTree(ws); err != nil {
		t.Fatal(err)
	}
	if len(g.paths) != 0 {
		t.Errorf("protected %v in a repository the sandbox cannot write", g.paths)
	}
}

func TestReadGitFile(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ data, want, err string }{
		{"gitdir: ../.git/modules/sub\n", filepath.Join(filepath.Dir(dir), ".git/modules/sub"), ""},
		{"gitdir: /abs/wt\r\n", "/abs/wt", ""},
		{"gitdir:/abs", "", "gitdir: PATH"},
		{"gitdir: ", "", "gitdir: PATH"},
		{"", "", "gitdir: PATH"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, ".git")
		write(t, path, c.data)
		got, err := readGitFile(path)
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("readGitFile(%q) = %q, %v; want %q, %q", c.data, got, err, c.want, c.err)
		}
	}
}

// With git: a hooks path reached through a link the sandbox could replace
// is refused; a missing include is created empty and protected.
func TestGitProtectionWithGit(t *testing.T) {
	git := findGit(&policy.Policy{})
	if git == "" {
		t.Skip("no git at a system path")
	}
	g, ws := newGitFixture(t, git)
	os.Mkdir(filepath.Join(ws, "real-hooks"), 0o755)
	os.Symlink("real-hooks", filepath.Join(ws, "hooks-link"))
	write(t, filepath.Join(ws, ".git/config"), "[core]\n\thooksPath = hooks-link\n")
	if err := g.workTree(ws); err == nil || !strings.Contains(err.Error(), "has a symlink that a sandbox could replace") {
		t.Fatalf("workTree = %v; want the symlinked hooks path refused", err)
	}

	g, ws = newGitFixture(t, git)
	write(t, filepath.Join(ws, ".git/config"), "[include]\n\tpath = ../shared.gitconfig\n")
	if err := g.workTree(ws); err != nil {
		t.Fatal(err)
	}
	inc := filepath.Join(ws, "shared.gitconfig")
	if fi, err := os.Lstat(inc); err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		t.Fatalf("include %s: %v, %v; want an empty file", inc, fi, err)
	}
	if _, ok := g.why[inc]; !ok {
		t.Errorf("include %s is not protected; protected: %v", inc, g.paths)
	}
}

// Reaching a repository first through one of its linked worktrees still
// protects what belongs to its main work tree (core.hooksPath there).
func TestGitProtectionWorktreeFirst(t *testing.T) {
	git := findGit(&policy.Policy{})
	if git == "" {
		t.Skip("no git at a system path")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	main, wt := filepath.Join(root, "main"), filepath.Join(root, "wt")
	for _, args := range [][]string{
		{"init", "-q", main},
		{"-C", main, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "i"},
		{"-C", main, "config", "core.hooksPath", ".husky"},
		{"-C", main, "worktree", "add", "-q", wt},
	} {
		cmd := exec.Command(git, args...)
		cmd.Env = []string{"HOME=" + root, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	p := &policy.Policy{ReadAll: true, Grants: []policy.Grant{{Path: root, Access: policy.Write}}}
	pr := &protector{p: p, t: target{os: "linux", host: true}, why: map[string]string{}}
	g := &gitProtector{protector: pr, env: Dirs{Home: root}, git: git, seen: map[string]bool{}}
	for _, w := range []string{wt, main} {
		if err := g.workTree(w); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{
		filepath.Join(main, ".husky"), filepath.Join(wt, ".husky"), filepath.Join(wt, ".git"),
		filepath.Join(main, ".git/hooks"), filepath.Join(main, ".git/worktrees/wt/commondir"),
	} {
		if _, ok := g.why[want]; !ok {
			t.Errorf("%s is not protected; protected: %v", want, g.paths)
		}
	}
}

// A global config that a grant makes writable (home granted read-write) is
// protected too: it can name hooks for every repository.
func TestGitProtectionWritableGlobalConfig(t *testing.T) {
	git := findGit(&policy.Policy{})
	if git == "" {
		t.Skip("no git at a system path")
	}
	g, ws := newGitFixture(t, git)
	global := filepath.Join(ws, ".gitconfig")
	write(t, global, "[user]\n\tname = t\n")
	if err := g.workTree(ws); err != nil {
		t.Fatal(err)
	}
	if why := g.why[global]; why != "git: a config file git reads" {
		t.Errorf("%s: protected as %q; protected: %v", global, why, g.paths)
	}
	if why := g.why[filepath.Join(ws, ".git/config")]; !strings.HasPrefix(why, "git config:") {
		t.Errorf(".git/config protected as %q", why)
	}
}

// A .git file naming a repository that is gone, somewhere no sandbox can
// write, does not refuse the run; the file itself is still protected.
func TestGitProtectionStaleGitFile(t *testing.T) {
	g, ws := newGitFixture(t, "")
	os.RemoveAll(filepath.Join(ws, ".git"))
	write(t, filepath.Join(ws, ".git"), "gitdir: /nonexistent-grok-sandbox-test/wt\n")
	if err := g.workTree(ws); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.why[filepath.Join(ws, ".git")]; !ok || len(g.paths) != 1 {
		t.Errorf("protected %v; want only the .git file", g.paths)
	}
}
