package launcher

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"grok-sandbox/launcher/config"
	"grok-sandbox/launcher/printable"
)

// Bubblewrap is what is known of the host's bubblewrap.
type Bubblewrap struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	Usable  bool   `json:"usable"`
	// Reason says why it is not usable, and the fix.
	Reason string `json:"reason,omitempty"`
}

// minBwrap is the oldest bubblewrap the argv is written for: 0.8.0 brought
// --disable-userns.
var minBwrap = [3]int{0, 8, 0}

// bwrapCacheKey identifies the facts a probe result depends on: the binary,
// the user, the kernel and its user-namespace settings. Any change probes
// again.
func bwrapCacheKey(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|%d|%d", path, fi.Size(), fi.ModTime().UnixNano(), os.Getuid())
	for _, f := range []string{"/proc/sys/kernel/osrelease", "/proc/sys/user/max_user_namespaces",
		"/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"} {
		data, _ := os.ReadFile(f)
		b.WriteString("|" + strings.TrimSpace(string(data)))
	}
	return b.String(), nil
}

// readSmallFile reads a small regular file without following a link or
// blocking: a FIFO, a link to /dev/zero or a huge file planted at the path
// (devbox can write ~/.cache) must not hang or exhaust a launch.
func readSmallFile(path string) ([]byte, error) {
	f, err := config.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 64<<10+1))
	if err != nil {
		return nil, err
	}
	if len(data) > 64<<10 {
		return nil, fmt.Errorf("%s is too large", path)
	}
	return data, nil
}

// bwrapCachePath is where a successful probe is remembered: the user's cache
// directory, which the sandboxes do not make writable (GROK_HOME is), and
// GROK_HOME only when there is none.
func bwrapCachePath(grokHome string) string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "grok-sandbox", "bwrap-probe.json")
	}
	return filepath.Join(grokHome, ".sandbox-bwrap-probe.json")
}

type bwrapCache struct {
	Key     string `json:"key"`
	Version string `json:"version"`
}

// bwrapDirs are where bwrap is looked for: system directories only, never
// PATH. bwrap runs outside the sandbox with the user's full rights, and a
// directory on PATH may be one a sandbox can write (an activated
// virtualenv's bin, node_modules/.bin, ~/.local/bin under a grant): a
// bwrap planted there would run at the next launch.
var bwrapDirs = []string{"/usr/bin", "/usr/local/bin", "/bin"}

// bwrapPath is GROK_SANDBOX_BWRAP when set (an absolute path the user
// chose), else the first bwrap in bwrapDirs.
func bwrapPath() (string, error) {
	if p := os.Getenv("GROK_SANDBOX_BWRAP"); p != "" {
		if !filepath.IsAbs(p) {
			return "", fmt.Errorf("GROK_SANDBOX_BWRAP=%s is not an absolute path", printable.String(p))
		}
		if _, err := os.Stat(p); err != nil {
			// The variable names the bwrap to use, and it is not there:
			// say that, not that bwrap is missing (it may well be).
			return "", fmt.Errorf("GROK_SANDBOX_BWRAP=%s, the bwrap it names, cannot be used: %v; unset it to use the system's bwrap (looked for in %s), or name an existing one", printable.String(p), err, strings.Join(bwrapDirs, ", "))
		}
		return p, nil
	}
	for _, d := range bwrapDirs {
		p := filepath.Join(d, "bwrap")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap); looked in %s (never on PATH)", strings.Join(bwrapDirs, ", "))
}

// FindBwrap locates bwrap (see bwrapPath) and says whether it can make a sandbox
// here. A successful probe is remembered (when remember is set: run does,
// read-only verbs write nothing) in the user's cache directory, keyed on
// everything it depends on, so launches do not pay for it; a failure is
// never remembered (so a planted cache file can only skip a probe that
// would pass, never force a fallback).
func FindBwrap(grokHome string, useCache, remember bool) Bubblewrap {
	path, err := bwrapPath()
	if err != nil {
		return Bubblewrap{Reason: err.Error()}
	}
	info := Bubblewrap{Path: path}
	key, err := bwrapCacheKey(path)
	cacheFile := bwrapCachePath(grokHome)
	if err == nil && useCache {
		var c bwrapCache
		if data, err := readSmallFile(cacheFile); err == nil && json.Unmarshal(data, &c) == nil && c.Key == key {
			info.Version, info.Usable = c.Version, true
			return info
		}
	}
	info = probeBwrap(path)
	if info.Usable && key != "" && remember {
		_ = os.MkdirAll(filepath.Dir(cacheFile), 0o700)
		if data, err := json.Marshal(bwrapCache{Key: key, Version: info.Version}); err == nil {
			// A fresh, unpredictable name, created exclusively: nothing
			// planted in the directory can be written through.
			if f, err := os.CreateTemp(filepath.Dir(cacheFile), "bwrap-probe-*.tmp"); err == nil {
				_, werr := f.Write(data)
				if cerr := f.Close(); werr == nil && cerr == nil {
					_ = os.Rename(f.Name(), cacheFile)
				} else {
					os.Remove(f.Name())
				}
			}
		}
	}
	return info
}

var versionRe = regexp.MustCompile(`(\d+)\.(\d+)(?:\.(\d+))?`)

func probeBwrap(path string) Bubblewrap {
	info := Bubblewrap{Path: path}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		info.Reason = fmt.Sprintf("%s --version failed (%v); reinstall bubblewrap", path, err)
		return info
	}
	m := versionRe.FindStringSubmatch(string(out))
	if m == nil {
		info.Reason = fmt.Sprintf("%s --version printed %q, not a version; reinstall bubblewrap", path, strings.TrimSpace(string(out)))
		return info
	}
	info.Version = m[0]
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	if v[0] < minBwrap[0] || v[0] == minBwrap[0] && (v[1] < minBwrap[1] || v[1] == minBwrap[1] && v[2] < minBwrap[2]) {
		info.Reason = fmt.Sprintf("bubblewrap %s is too old: 0.8.0 or later is needed (for --disable-userns); upgrade it", info.Version)
		return info
	}
	cmd := exec.CommandContext(ctx, path, "--unshare-user", "--unshare-pid", "--disable-userns", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		info.Reason = userNSReason(strings.TrimSpace(stderr.String()), err)
		return info
	}
	info.Usable = true
	return info
}

// userNSReason explains a failed probe, naming the setting to change.
func userNSReason(stderr string, err error) string {
	msg := stderr
	if msg == "" {
		msg = err.Error()
	}
	if first, _, ok := strings.Cut(msg, "\n"); ok {
		msg = first
	}
	read := func(f string) string {
		data, _ := os.ReadFile(f)
		return strings.TrimSpace(string(data))
	}
	// What bwrap prints when Ubuntu's AppArmor stops it from writing its
	// uid map, whether or not the sysctl can be read here.
	apparmorLike := strings.Contains(msg, "setting up uid map: Permission denied") ||
		strings.Contains(msg, "No permissions to create new namespace")
	if outer, inside := insideGrokSandbox(); inside {
		// The sandbox refuses new user namespaces: not the host's doing.
		return fmt.Sprintf("bwrap cannot make a sandbox here (%s): this process runs inside a grok-sandbox sandbox (%s), which refuses nested ones; run grok-sandbox outside it", msg, outer)
	}
	switch {
	case read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" || apparmorLike && read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") != "0":
		return fmt.Sprintf("bwrap cannot create a user namespace (%s): Ubuntu's AppArmor restricts unprivileged user namespaces; allow bwrap with an AppArmor profile, or set kernel.apparmor_restrict_unprivileged_userns=0", msg)
	case read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return fmt.Sprintf("bwrap cannot create a user namespace (%s): set kernel.unprivileged_userns_clone=1", msg)
	case read("/proc/sys/user/max_user_namespaces") == "0":
		return fmt.Sprintf("bwrap cannot create a user namespace (%s): set user.max_user_namespaces above 0", msg)
	}
	return fmt.Sprintf("bwrap does not work here (%s); check that user namespaces are enabled", msg)
}
