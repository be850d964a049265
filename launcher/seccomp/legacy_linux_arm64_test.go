package seccomp

// legacySyscalls: arm64 has none but the syscalls every architecture has
// (TestSyscallTableMatchesXSys); open, stat, rename and the rest exist
// only as their *at forms there, and x/sys/unix has no SYS_OPEN for it.
var legacySyscalls = map[string]int{}
