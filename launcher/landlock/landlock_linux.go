package landlock

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The rights and scopes above must be the kernel's.
var _ = [1]struct{}{}[0|
	(accessExecute^unix.LANDLOCK_ACCESS_FS_EXECUTE)|
	(accessWriteFile^unix.LANDLOCK_ACCESS_FS_WRITE_FILE)|
	(accessReadFile^unix.LANDLOCK_ACCESS_FS_READ_FILE)|
	(accessReadDir^unix.LANDLOCK_ACCESS_FS_READ_DIR)|
	(accessRemoveDir^unix.LANDLOCK_ACCESS_FS_REMOVE_DIR)|
	(accessRemoveFile^unix.LANDLOCK_ACCESS_FS_REMOVE_FILE)|
	(accessMakeChar^unix.LANDLOCK_ACCESS_FS_MAKE_CHAR)|
	(accessMakeDir^unix.LANDLOCK_ACCESS_FS_MAKE_DIR)|
	(accessMakeReg^unix.LANDLOCK_ACCESS_FS_MAKE_REG)|
	(accessMakeSock^unix.LANDLOCK_ACCESS_FS_MAKE_SOCK)|
	(accessMakeFifo^unix.LANDLOCK_ACCESS_FS_MAKE_FIFO)|
	(accessMakeBlock^unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK)|
	(accessMakeSym^unix.LANDLOCK_ACCESS_FS_MAKE_SYM)|
	(accessRefer^unix.LANDLOCK_ACCESS_FS_REFER)|
	(accessTruncate^unix.LANDLOCK_ACCESS_FS_TRUNCATE)|
	(accessIoctlDev^unix.LANDLOCK_ACCESS_FS_IOCTL_DEV)|
	(accessResolveUnix^unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX)|
	(scopeSignal^unix.LANDLOCK_SCOPE_SIGNAL)|
	(scopeAbstractUnixSocket^unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET)]

// ABI is the Landlock ABI version of the running kernel, 0 when Landlock is
// unavailable (not built in, not enabled in lsm=, or an old kernel).
func ABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 || int(v) < 0 {
		return 0
	}
	return int(v)
}

// Apply restricts the calling thread: it creates the ruleset, adds every
// rule, sets no_new_privs and calls landlock_restrict_self, all for the
// calling thread only. It locks the calling goroutine to its thread and never
// unlocks it: the caller execs (or forks the command) from this goroutine
// right after, and when the goroutine ends, Go ends the restricted thread
// instead of reusing it. Any failure is returned; the thread may then be
// partly restricted (no_new_privs) but never silently unrestricted: the
// caller must not run the command.
func (r *Ruleset) Apply() error {
	runtime.LockOSThread()
	if r.ABI < 1 || r.Handled == 0 {
		return errors.New("landlock: empty ruleset: refusing to run unrestricted")
	}
	if abi := ABI(); abi < r.ABI {
		return fmt.Errorf("landlock: the ruleset was planned for ABI %d, this kernel has %d", r.ABI, abi)
	}
	if r.Handled&^handledFS(r.ABI) != 0 || r.Scoped&^scopes(r.ABI, true) != 0 {
		return fmt.Errorf("landlock: the ruleset asks for rights ABI %d does not know", r.ABI)
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: r.Handled, Scoped: r.Scoped}
	// Pass only the fields in use: handled_access_fs, or up to scoped (which
	// needs handled_access_net, zero, before it). An older kernel rejects a
	// size with non-zero bytes it does not know.
	size := unsafe.Offsetof(attr.Handled_access_net)
	if r.Scoped != 0 {
		size = unsafe.Offsetof(attr.Quiet_access_fs)
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return fmt.Errorf("landlock: create ruleset (handled %s, scoped %#x): %v", AccessString(r.Handled), r.Scoped, e)
	}
	rulesetFD := int(fd)
	defer unix.Close(rulesetFD)
	for _, rule := range r.Rules {
		if err := addRule(rulesetFD, rule, r.Handled); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("landlock: set no_new_privs: %v", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rulesetFD), 0, 0); e != 0 {
		return fmt.Errorf("landlock: restrict self: %v", e)
	}
	return nil
}

// addRule adds one path-beneath rule. The path is opened without following
// any symlink, and must still be what Plan saw (a directory or not).
func addRule(rulesetFD int, rule Rule, handled uint64) error {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, rule.Path, &how)
	if err != nil {
		return fmt.Errorf("landlock: open %s: %v", rule.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock: stat %s: %v", rule.Path, err)
	}
	if dir := st.Mode&unix.S_IFMT == unix.S_IFDIR; dir != rule.Dir {
		return fmt.Errorf("landlock: %s changed type since the ruleset was planned", rule.Path)
	}
	access := rule.Access & handled
	if !rule.Dir {
		access &= fileRights
	}
	if access == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	runtime.KeepAlive(&attr)
	if e != 0 {
		return fmt.Errorf("landlock: add rule %s (%s): %v", rule.Path, AccessString(access), e)
	}
	return nil
}
