// Package sandboxinit is pid 1 of a grok-sandbox sandbox: the init stage
// bwrap execs (Run), and the supervisor that starts the command under its
// filter, answers the notifying filter's calls and reaps (Supervise, which
// the Landlock backend runs on the host too). It reads its
// initcfg.Config from a descriptor, mounts the staged layers and the
// masks by descriptor (mount_linux.go), checks every layer it was asked
// for against the kernel before the command starts (verify_linux.go), and
// fails closed otherwise.
//
// It is the orchestration only, and the one package that imports the
// parts (each of which imports none of the others but what it is built
// on):
//
//   - initcfg: the Config, the descriptor numbers, the exit statuses;
//   - initproc: what each process of the init stage does to itself
//     (capabilities, its thread's check, descriptors, signals);
//   - violations: the event log's rate-limited writer every part feeds;
//   - starter: the command's starter, for a command that runs as you;
//   - childnet: the children's private network and its net helper;
//   - proxy: the allow_hosts proxy, on childnet's network;
//   - maskfs: the mask observer, a minimal FUSE file system;
//   - pathwatch: the path observer of the notifying filter.
//
// Run dispatches the helpers (starter.Arg, childnet.HelperArg,
// maskfs.ObserverArg) before anything else; the order of what it does
// before and after the capability drop is in Run's comment.
package sandboxinit
