// Package starter is the command's starter, for a command that runs as
// you while the init stage mounts as root.
//
// The command runs as you. An init stage that mounts (masks, staged
// layers, the children's network namespace) must be uid 0 of the sandbox's
// user namespace, with capabilities there; the command must not be. So the
// init stage starts the command's starter in a user namespace nested in the
// sandbox's, whose uid_map and gid_map map your uid and gid onto the
// sandbox's 0:
//
//   - the starter, and the command it becomes, are you (getuid and the rest
//     say your ids; files they create are yours outside, as the sandbox's 0
//     is you outside) and hold no capability anywhere: the mount, network
//     and pid namespaces belong to the sandbox's user namespace, so mount,
//     umount and move_mount fail whatever the command does;
//   - its filter refuses any further user namespace (except where the
//     profile allows nested ones): the base filter cannot, since the init
//     stage makes this one;
//   - nothing in the nested namespace can trace, read or write the memory
//     of the init stage or its helpers, whose namespace is its parent.
//
// The starter is made by the init stage's first run, which holds the
// capabilities for it (CAP_SETFCAP: the map's lower id is the namespace's
// root), and waits on its socket. The init stage's last run (after the
// masks and the re-exec) sends it the command, its environment and its
// filter; the starter drops what it came with, installs the filter, checks
// its ids and its thread, sends the filter's listener back, and execs.
//
// pid 1 (launcher/sandboxinit) calls Fork in its first run, Held and
// Release in its last; Run is the starter itself (the init stage's Arg).
// Linux only.
package starter
