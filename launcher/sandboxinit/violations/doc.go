// Package violations is the init stage's side of the event log: every
// blocked attempt the supervisor, the children's network
// (launcher/sandboxinit/childnet), the allow_hosts proxy
// (launcher/sandboxinit/proxy) and the observers
// (launcher/sandboxinit/maskfs, launcher/sandboxinit/pathwatch) see goes
// through a Log, which rate-limits it, queues it for a writer that never
// holds the supervisor up, and ends the run with a summary line and, for
// refused network attempts, one line on the command's stderr. It imports
// none of the parts that feed it. Linux only.
package violations
