// Package childnet is the children's network under restrict_network:
// the net helper, a process in a network namespace of the children's own,
// and the supervisor's side that answers the children's socket, bind,
// connect, listen and sendto calls with it (Net.Handle).
//
// The command keeps the host's network; every process it starts gets its
// IP sockets from a network namespace of their own that has only a
// loopback interface, so they can serve and reach each other on 127.0.0.1
// and ::1 and nothing else. How:
//
//   - Before the init stage drops its capabilities, a thread of it
//     unshares a network namespace, brings lo up, drops that thread's
//     capabilities and, from that thread, starts the net helper (this
//     binary again, "__sandbox-init --net-helper"): a process wholly in the
//     private namespace, with no capability, non-dumpable, whose only job
//     is to make sockets on request over a seqpacket pair and pass them
//     back (SCM_RIGHTS). A process, not a thread: the init stage execs
//     itself again after masking (which would end a thread), and a Go
//     process cannot drop a capability on every one of its threads
//     (AllThreadsSyscall refuses a binary with cgo).
//   - A child's socket(AF_INET or AF_INET6, or AF_NETLINK with
//     NETLINK_ROUTE) reaches the supervisor (the child filter notifies
//     it); the supervisor gets the same socket from the helper and installs
//     it in the child as socket()'s result (SECCOMP_IOCTL_NOTIF_ADDFD with
//     SECCOMP_ADDFD_FLAG_SEND, Linux 5.14).
//   - A child's bind, connect and listen reach the supervisor too. It takes
//     the child's descriptor (pidfd_getfd), checks that it is a socket of
//     the private namespace (SO_NETNS_COOKIE) of an IP or netlink family,
//     copies the address out of the child's memory, and makes the call
//     itself, on that very socket with that copy: a child that swaps the
//     descriptor or rewrites the address meanwhile changes nothing. Any
//     other socket (a Unix one: a path reaches host sockets from any
//     namespace; one the command handed down) is refused, as before.
//     Where the kernel keeps a received notification pending through the
//     caller's signals (Linux 5.19), children get Unix datagram sockets
//     too, and every send of theirs that can carry an address (sendto
//     with one, sendmsg, sendmmsg) is made by the supervisor, on a copy of
//     the socket with the address checked (send_linux.go); elsewhere
//     sendto with an address continues for private sockets only, and
//     children get no Unix datagram socket.
//   - A connect to anything but loopback is refused (EACCES) and logged; a
//     refused connection on loopback (nothing listens there inside) is
//     logged too, since that is what reaching for a host service looks
//     like. Both name the destination.
//
// Where any of it is missing (no helper, no ADDFD flag, no pidfd_getfd,
// no SO_NETNS_COOKIE) children get no socket at all, as before, with a
// warning: never more.
//
// pid 1 (launcher/sandboxinit) calls PrepareHelper while it holds the
// capabilities, Helper.Start once they are gone, and Open before the
// command starts; RunHelper is the net
// helper itself (the init stage's HelperArg). The allow_hosts proxy
// (launcher/sandboxinit/proxy) listens inside with a socket of Net's.
// Linux only.
package childnet
