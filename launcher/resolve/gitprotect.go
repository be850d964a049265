package resolve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"grok-sandbox/launcher/policy"
)

// Git runs code named by files inside a repository: hooks, and commands in
// its config (core.hooksPath, core.fsmonitor, filter drivers, aliases, ...).
// A sandbox that can write them plants code that runs at the user's next git
// command, outside any sandbox. protectGit makes them read-only for the
// repositories the sandbox can write:
//
//   - the repository whose work tree is a writable grant root (the
//     workspace, a read_write entry), or else the nearest one enclosing it;
//   - its common directory (a linked worktree's .git file names a gitdir
//     whose commondir file names the repository's);
//   - its linked worktrees (their .git files and commondir files);
//   - its submodules (every gitdir under modules/, recursively, and the
//     .git files of their checked-out work trees).
//
// In each: hooks/, config, info/, the directory core.hooksPath names, and
// every config file an include names; the .git file of a work tree and the
// commondir file that lead git to them. What git writes in normal use
// (index, objects, refs, logs, HEAD, lock files) stays writable.
func (pr *protector) protectGit(env Dirs) error {
	g := &gitProtector{protector: pr, env: env, seen: map[string]bool{}}
	g.git = findGit(pr.p)
	for _, gr := range append([]policy.Grant(nil), pr.p.Grants...) {
		if gr.Access != policy.Write {
			continue
		}
		for dir := gr.Path; ; dir = filepath.Dir(dir) {
			if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
				if err := g.workTree(dir); err != nil {
					return err
				}
				break
			}
			if dir == "/" {
				break
			}
		}
	}
	return nil
}

// gitProtector walks the repositories of one policy.
type gitProtector struct {
	*protector
	env  Dirs
	git  string // a git binary no sandbox can replace; "" when there is none
	seen map[string]bool
}

// Limits of the walk below modules/ (nested submodules).
const (
	maxGitDirs     = 500
	maxModuleDepth = 8
)

func (g *gitProtector) writable(path string) bool {
	return g.p.AccessAt(path) == policy.Write
}

// workTree protects the repository whose work tree is w.
func (g *gitProtector) workTree(w string) error {
	if g.seen["w:"+w] {
		return nil
	}
	g.seen["w:"+w] = true
	dotgit := filepath.Join(w, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return Refuse("git protection: %v", err)
	}
	var gitdir string
	switch {
	case fi.IsDir():
		if !g.writable(dotgit) {
			// An enclosing repository the sandbox cannot write.
			return nil
		}
		gitdir = dotgit
	case fi.Mode().IsRegular():
		if gitdir, err = readGitFile(dotgit); err != nil {
			return err
		}
		if g.writable(w) {
			g.add(dotgit, "git: names the repository of this work tree")
		}
	case !g.writable(w):
		return nil
	default:
		return Refuse("%s is a %s; a sandbox could replace it to make git run its own hooks, and a link cannot be held in place: replace it with the repository directory or a \"gitdir:\" file",
			dotgit, kindOf(fi))
	}
	return g.gitDir(gitdir, w, 0)
}

// gitDir protects the repository at gitdir (the .git directory, a linked
// worktree's gitdir or a submodule's), whose work tree is w ("" when not
// known).
func (g *gitProtector) gitDir(gitdir, w string, depth int) error {
	if _, err := os.Lstat(gitdir); errors.Is(err, fs.ErrNotExist) && !g.writable(gitdir) {
		// A .git file naming a repository that is gone, where no sandbox
		// could create it: git fails there, and nothing is to protect.
		return nil
	}
	gitdir, err := g.real(gitdir)
	if err != nil {
		return Refuse("git protection: repository %v", err)
	}
	if g.seen["g:"+gitdir] {
		return nil
	}
	if len(g.seen) > maxGitDirs {
		return Refuse("git protection: more than %d git directories under %s; the walk stops there", maxGitDirs, gitdir)
	}
	g.seen["g:"+gitdir] = true
	if g.writable(gitdir) && !slices.Contains(g.p.GitDirs, gitdir) {
		g.p.GitDirs = append(g.p.GitDirs, gitdir)
	}
	common := gitdir
	commondir := filepath.Join(gitdir, "commondir")
	if filepath.Base(filepath.Dir(gitdir)) != "worktrees" {
		// Only a linked worktree's gitdir (COMMON/worktrees/ID) names a
		// common directory; in a main or submodule gitdir a commondir
		// file would send git to another config and hooks. A sandbox can
		// create one unless the name is taken: it is made holding ".",
		// which git reads as the gitdir itself (the common directory it
		// uses anyway), and bound read-only like the config.
		if err := g.commonDirIsSelf(commondir); err != nil {
			return err
		}
	} else if fi, err := os.Lstat(commondir); err == nil {
		if !fi.Mode().IsRegular() {
			return Refuse("%s is not a regular file; move it away", commondir)
		}
		data, err := readSmall(commondir)
		if err != nil {
			return err
		}
		c := strings.TrimRight(string(data), "\r\n")
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitdir, c)
		}
		if common, err = g.real(c); err != nil {
			return Refuse("git protection: %s names a common directory that %v", commondir, err)
		}
		if g.writable(commondir) {
			g.add(commondir, "git: names where the repository's config and hooks are")
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Refuse("git protection: %v", err)
	}
	cfg, err := g.config(gitdir, common)
	if err != nil {
		return err
	}
	if w == "" && cfg.workTree != "" {
		// A submodule's gitdir names its work tree, whose .git file
		// leads git back here.
		if w = cfg.workTree; !filepath.IsAbs(w) {
			w = filepath.Join(gitdir, w)
		}
		w = filepath.Clean(w)
		dotgit := filepath.Join(w, ".git")
		if fi, err := os.Lstat(dotgit); err == nil && fi.Mode().IsRegular() && g.writable(w) {
			real, err := g.real(dotgit)
			if err != nil {
				return Refuse("git protection: submodule work tree %v", err)
			}
			g.add(real, "git: names the repository of this submodule")
		}
	}
	if !g.seen["p:"+common] {
		g.seen["p:"+common] = true
		if err := g.persistence(common, cfg); err != nil {
			return err
		}
	}
	if cfg.worktreeConfig && common != gitdir {
		if err := g.file(filepath.Join(gitdir, "config.worktree"), "git: this worktree's config"); err != nil {
			return err
		}
	}
	if cfg.hooksPath != "" {
		if err := g.hooksPath(cfg.hooksPath, w); err != nil {
			return err
		}
	}
	for _, inc := range cfg.includes {
		if err := g.include(inc, "git: included config"); err != nil {
			return err
		}
	}
	// The global config too, where a grant makes it writable (a
	// read_write entry for home): it can name hooks as well.
	for _, f := range cfg.files {
		if err := g.include(f, "git: a config file git reads"); err != nil {
			return err
		}
	}
	if err := g.worktrees(common); err != nil {
		return err
	}
	return g.modules(filepath.Join(common, "modules"), depth)
}

// persistence protects what git runs or reads configuration from in the
// common directory; a missing hooks/ or info/ is created first (an empty
// directory, 0755), or the sandbox could create it with a hook inside.
func (g *gitProtector) persistence(common string, cfg gitConfig) error {
	if !g.writable(common) {
		return nil
	}
	for _, d := range []struct{ name, why string }{
		{"hooks", "git hooks: run by git outside the sandbox"},
		{"info", "git: attributes and excludes"},
	} {
		path := filepath.Join(common, d.name)
		if err := ensureRealMode(path, true, 0o755, g.env.dryRunList()); err != nil {
			return err
		}
		g.add(path, d.why)
	}
	if err := g.file(filepath.Join(common, "config"), "git config: hooksPath, fsmonitor, filters and aliases run commands"); err != nil {
		return err
	}
	if cfg.worktreeConfig {
		return g.file(filepath.Join(common, "config.worktree"), "git: the main worktree's config")
	}
	return nil
}

// file protects a config file, created empty (0644) when missing: an empty
// git config is valid, and a missing one could be created by the sandbox.
func (g *gitProtector) file(path, why string) error {
	if !g.writable(path) {
		return nil
	}
	if err := ensureRealMode(path, false, 0o644, g.env.dryRunList()); err != nil {
		return err
	}
	g.add(path, why)
	return nil
}

// hooksPath protects the directory core.hooksPath names (relative to the
// work tree w, as git reads it), created when missing. Husky 9 sets it to
// .husky/_, whose stubs run the scripts in .husky/: then .husky is protected.
// A relative one is skipped when the work tree is not known (a worktree
// whose own .git file is protected where it is found).
func (g *gitProtector) hooksPath(value, w string) error {
	if strings.HasPrefix(value, "~") && value != "~" && !strings.HasPrefix(value, "~/") || strings.HasPrefix(value, "%(") {
		return Refuse("git protection: core.hooksPath %q (another user's home or an install prefix) is not supported; write the absolute path", value)
	}
	path := expandHome(value, g.env.Home)
	if !filepath.IsAbs(path) {
		if w == "" {
			return nil
		}
		path = filepath.Join(w, path)
	}
	path = filepath.Clean(path)
	if filepath.Base(path) == "_" && filepath.Base(filepath.Dir(path)) == ".husky" {
		path = filepath.Dir(path)
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if !g.writable(path) {
			return nil
		}
		if l := g.env.dryRunList(); l != nil {
			// A read-only verb: protect it as run will, having made it.
			*l = append(*l, path+"/")
			g.add(path, "git core.hooksPath: hooks run by git outside the sandbox")
			return nil
		}
		if err := g.mkdirAll(path); err != nil {
			return err
		}
	}
	real, err := g.real(path)
	if err != nil {
		return Refuse("git protection: core.hooksPath %v", err)
	}
	if !g.writable(real) {
		return nil
	}
	if err := ensureRealMode(real, true, 0o755, g.env.dryRunList()); err != nil {
		return err
	}
	g.add(real, "git core.hooksPath: hooks run by git outside the sandbox")
	return nil
}

// commonDirIsSelf makes sure a main or submodule gitdir's commondir file
// can only say "the gitdir itself": created holding "." when missing (and
// a sandbox could create it), accepted when it holds just ".", refused
// when it names anything else; then protected.
func (g *gitProtector) commonDirIsSelf(commondir string) error {
	if !g.writable(commondir) {
		return nil
	}
	const self = ".\n"
	fi, err := os.Lstat(commondir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if l := g.env.dryRunList(); l != nil {
			*l = append(*l, commondir)
		} else if err := createWith(commondir, false, 0o644, []byte(self)); err != nil {
			return Refuse("git protection: cannot create %s: %v", commondir, err)
		}
	case err != nil:
		return Refuse("git protection: %v", err)
	case !fi.Mode().IsRegular():
		return Refuse("%s is not a regular file; move it away", commondir)
	default:
		data, err := readSmall(commondir)
		if err != nil {
			return err
		}
		if strings.TrimRight(string(data), "\r\n") != "." {
			return Refuse("%s exists in a repository that is no linked worktree: git would take its config and hooks from where it points, and a sandboxed command may have planted it; inspect it and remove it", commondir)
		}
	}
	g.add(commondir, `git: says the repository is its own common directory ("."), so that no other can be named`)
	return nil
}

// include protects a config file git reads or an include names (created
// empty when missing: git skips a missing include, and the sandbox could
// create it).
func (g *gitProtector) include(path, why string) error {
	if _, err := os.Lstat(path); err == nil {
		real, err := g.real(path)
		if err != nil {
			return Refuse("git protection: included config %v", err)
		}
		path = real
	} else if parent, err := g.real(filepath.Dir(path)); err == nil {
		path = filepath.Join(parent, filepath.Base(path))
	} else {
		if g.writable(path) {
			return Refuse("git protection: included config %s cannot be protected: its directory %v; create it", path, err)
		}
		return nil
	}
	return g.file(path, why)
}

// worktrees protects, for each linked worktree of the repository, the
// commondir file of its gitdir and the .git file of its work tree.
func (g *gitProtector) worktrees(common string) error {
	ents, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		gitdir := filepath.Join(common, "worktrees", e.Name())
		w := ""
		if data, err := readSmall(filepath.Join(gitdir, "gitdir")); err == nil {
			dotgit := strings.TrimRight(string(data), "\r\n")
			if fi, err := os.Lstat(dotgit); err == nil && fi.Mode().IsRegular() && filepath.IsAbs(dotgit) {
				if real, err := g.real(dotgit); err == nil {
					w = filepath.Dir(real)
					if g.writable(w) {
						g.add(real, "git: names the repository of this work tree")
					}
				}
			}
		}
		if err := g.gitDir(gitdir, w, 0); err != nil {
			return err
		}
	}
	return nil
}

// modules protects every submodule gitdir below dir (names may have
// slashes, and submodules nest), and the .git file of each checked-out
// submodule work tree.
func (g *gitProtector) modules(dir string, depth int) error {
	if depth > maxModuleDepth {
		return Refuse("git protection: submodules nest deeper than %d at %s", maxModuleDepth, dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			if g.writable(dir) {
				return Refuse("%s is a symlink; git would follow it to another submodule repository: replace it with the directory", path)
			}
			continue
		}
		if !e.IsDir() {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(path, "HEAD")); err != nil || !fi.Mode().IsRegular() {
			if err := g.modules(path, depth+1); err != nil {
				return err
			}
			continue
		}
		if err := g.gitDir(path, "", depth+1); err != nil {
			return err
		}
	}
	return nil
}

// real resolves path to its canonical form, refusing a symlink in any
// component that the sandbox could replace (one in a writable directory):
// git outside would follow the replaced link. Links in directories no
// sandbox can write (a /home -> /data/home) are followed.
func (g *gitProtector) real(path string) (string, error) {
	cur := "/"
	for _, part := range strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/") {
		if part == "" {
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", fmt.Errorf("%s: %v", path, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if g.writable(cur) {
				return "", fmt.Errorf("%s has a symlink that a sandbox could replace (%s); use the real path", path, next)
			}
			if next, err = filepath.EvalSymlinks(next); err != nil {
				return "", fmt.Errorf("%s: %v", path, err)
			}
		}
		cur = next
	}
	return cur, nil
}

// mkdirAll creates path and its missing parents (0755), none of them through
// a link.
func (g *gitProtector) mkdirAll(path string) error {
	parent := filepath.Dir(path)
	if _, err := os.Lstat(parent); errors.Is(err, fs.ErrNotExist) && parent != path {
		if err := g.mkdirAll(parent); err != nil {
			return err
		}
	}
	if real, err := g.real(parent); err != nil || real != parent {
		return Refuse("git protection: cannot create %s: its directory is not a real directory (%v)", path, err)
	}
	return ensureRealMode(path, true, 0o755, g.env.dryRunList())
}

// gitConfig is what protection needs to know of a repository's config.
type gitConfig struct {
	hooksPath      string
	worktreeConfig bool
	workTree       string   // core.worktree (submodules)
	includes       []string // absolute paths named by include and includeIf
	files          []string // every config file git read (global ones too)
}

// config reads the repository's effective config as git itself does
// (system, global, the repository's, includes), with git found at a fixed
// system path and a clean environment, so that no sandbox can replace the
// program or steer what it reads. Git's parser is the one that decides what
// the user's git will run; a second parser here could disagree with it.
// Without git, a config that mentions what needs git to resolve refuses
// the run.
func (g *gitProtector) config(gitdir, common string) (gitConfig, error) {
	var c gitConfig
	if g.git == "" {
		data, _ := readSmall(filepath.Join(common, "config"))
		lower := strings.ToLower(string(data))
		for _, word := range []string{"hookspath", "include", "worktreeconfig"} {
			if strings.Contains(lower, word) {
				return c, Refuse("git protection: %s/config sets %s, and no git was found at /usr/bin/git, /bin/git or /usr/local/bin/git (outside the sandbox's grants) to read it; install git",
					common, word)
			}
		}
		return c, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.git, "config", "--list", "--show-origin", "--includes", "-z")
	cmd.Dir = gitdir
	cmd.Env = []string{"HOME=" + g.env.Home, "PATH=/usr/bin:/bin", "LC_ALL=C", "GIT_DIR=" + gitdir}
	// A config (and what it includes) is a few kilobytes: a sandbox that
	// planted a huge include must not make the launcher hold it in memory.
	out, errb := &cappedBuffer{max: maxGitConfigOutput}, &cappedBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, errb
	err := cmd.Run()
	if err == nil && out.over {
		err = fmt.Errorf("its configuration is larger than %d KiB", maxGitConfigOutput>>10)
	}
	if err != nil {
		return c, Refuse("git protection: cannot read the git config of %s (%v: %s); fix the config",
			gitdir, err, strings.TrimSpace(errb.String()))
	}
	fields := strings.Split(out.String(), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		origin, kv := fields[i], fields[i+1]
		key, value, _ := strings.Cut(kv, "\n")
		file, isFile := strings.CutPrefix(origin, "file:")
		if isFile && !filepath.IsAbs(file) {
			file = filepath.Join(gitdir, file)
		}
		if isFile && !slices.Contains(c.files, file) {
			c.files = append(c.files, file)
		}
		switch {
		case key == "core.hookspath":
			c.hooksPath = value
		case key == "extensions.worktreeconfig":
			c.worktreeConfig = gitTrue(value)
		case key == "core.worktree" && isFile && filepath.Clean(file) == filepath.Join(gitdir, "config"):
			c.workTree = value
		case key == "include.path" || (strings.HasPrefix(key, "includeif.") && strings.HasSuffix(key, ".path")):
			inc := expandHome(value, g.env.Home)
			if !filepath.IsAbs(inc) {
				if !isFile {
					continue
				}
				inc = filepath.Join(filepath.Dir(file), inc)
			}
			c.includes = append(c.includes, filepath.Clean(inc))
		}
	}
	return c, nil
}

// maxGitConfigOutput bounds what git config --list may print at launch.
const maxGitConfigOutput = 1 << 20

// cappedBuffer keeps at most max bytes and notes that there was more.
type cappedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

func gitTrue(v string) bool {
	switch strings.ToLower(v) {
	case "", "true", "yes", "on", "1":
		return true
	}
	return false
}

// findGit returns the first git at a fixed system path that the policy does
// not let a sandbox write, or "".
func findGit(p *policy.Policy) string {
	for _, cand := range []string{"/usr/bin/git", "/bin/git", "/usr/local/bin/git"} {
		real, err := filepath.EvalSymlinks(cand)
		if err != nil || p.AccessAt(real) == policy.Write {
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return real
		}
	}
	return ""
}

func expandHome(path, home string) string {
	switch {
	case path == "~":
		return home
	case strings.HasPrefix(path, "~/"):
		return filepath.Join(home, path[2:])
	}
	return path
}

// readGitFile reads a "gitdir: PATH" file, PATH relative to its directory.
func readGitFile(path string) (string, error) {
	data, err := readSmall(path)
	if err != nil {
		return "", err
	}
	line := strings.TrimRight(string(data), "\r\n")
	dir, ok := strings.CutPrefix(line, "gitdir: ")
	if !ok || dir == "" || strings.ContainsAny(dir, "\n\x00") {
		return "", Refuse("%s is not a \"gitdir: PATH\" file; git protection cannot tell which repository it names: fix or remove it", path)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(path), dir)
	}
	return filepath.Clean(dir), nil
}

// readSmall reads a small regular file without following a link and without
// blocking on a FIFO.
func readSmall(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, Refuse("git protection: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, Refuse("git protection: %s is not a regular file; move it away", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<16))
	if err != nil {
		return nil, Refuse("git protection: %v", err)
	}
	return data, nil
}

func kindOf(fi fs.FileInfo) string {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return "symlink"
	}
	return "special file"
}
