package seccomp

import "golang.org/x/sys/unix"

// legacySyscalls are the syscalls amd64 has besides the ones every
// architecture has (TestSyscallTableMatchesXSys): the path forms that
// arm64 has only as their *at variants.
var legacySyscalls = map[string]int{
	"open": unix.SYS_OPEN, "creat": unix.SYS_CREAT, "chmod": unix.SYS_CHMOD, "mknod": unix.SYS_MKNOD,
	"stat": unix.SYS_STAT, "lstat": unix.SYS_LSTAT, "access": unix.SYS_ACCESS,
	"rename": unix.SYS_RENAME, "mkdir": unix.SYS_MKDIR, "rmdir": unix.SYS_RMDIR,
	"link": unix.SYS_LINK, "unlink": unix.SYS_UNLINK, "symlink": unix.SYS_SYMLINK,
	"readlink": unix.SYS_READLINK, "chown": unix.SYS_CHOWN, "lchown": unix.SYS_LCHOWN,
}
