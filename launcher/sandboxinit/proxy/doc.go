// Package proxy is the allow_hosts proxy of the init stage.
//
// The allow-list proxy (allow_hosts). The init stage listens on
// 127.0.0.1:PORT twice:
//
//   - in the children's private namespace (a socket from the net helper):
//     an HTTP proxy (CONNECT tunnels, and plain http:// requests) that
//     dials, from the host's network, exactly the endpoints allow_hosts
//     lists and answers 403 to everything else;
//   - on the host's loopback, the same port: a proxy that dials anything,
//     for the wrapped command (the agent), which keeps the host's network
//     and may honour the same HTTPS_PROXY. It serves only connections whose
//     client socket belongs to a process of this sandbox (found by its
//     inode in /proc/PID/fd): no other process on the host gets a relay.
//
// HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (and their lower-case forms) name it
// in the command's environment, which its children inherit; NO_PROXY keeps
// the children's own loopback direct. No certificate is involved: a
// CONNECT tunnel carries the client's own TLS.
//
// pid 1 (launcher/sandboxinit) starts it (Start) with the children's
// network (launcher/sandboxinit/childnet), whose socket it listens on
// inside, and logs its refusals through launcher/sandboxinit/violations.
// Linux only.
package proxy
