// Package help holds grok-sandbox's reference, one markdown file a topic in
// topics/ (GitHub renders them; the README links each one), and gives them
// to `grok-sandbox help TOPIC` and to the man page.
package help

import (
	"embed"
	"regexp"
	"strings"
	"sync"
)

//go:embed topics/*.md
var files embed.FS

// A Topic is one file of topics/: NAME.md.
type Topic struct {
	Name    string // what `grok-sandbox help NAME` takes
	Summary string // the one line `grok-sandbox help` shows for it
}

// topics is every topic, in the order `grok-sandbox help` lists them and
// the man page holds them.
var topics = []Topic{
	{"commands", "every command and flag in detail; exit statuses"},
	{"profiles", "choosing a profile; the built-in ones; strict's system paths and what it hides"},
	{"config", "the files; custom profiles and their keys; project profiles and trust; read_only and read_write entries; precedence"},
	{"managed", "the administrator's requirements.toml: default and allowed profiles, forced deny and restrict_network"},
	{"environment", "[shell_environment_policy]; the variables grok-sandbox reads and sets"},
	{"deny", "deny lists and their globs"},
	{"network", "restrict_network, isolate_network, the children's private loopback; allow_hosts"},
	{"agents", "the agent CLIs grok-sandbox knows: state, protected files, the launcher rule"},
	{"recipes", "toolchain recipes: go, npm, pip and cargo inside the sandbox"},
	{"integrity", "hook protection and integrity across launches: control files, git"},
	{"violations", "the event log; violations: attempts on denied and protected paths"},
	{"json", "the JSON documents of print, explain, agents, status and the event log"},
	{"hardening", "what every sandbox also blocks: terminal injection, setuid, io_uring, other processes, the keyring"},
	{"limits", "what the sandbox does not cover"},
	{"backends", "bwrap and Landlock on Linux; how layers are mounted; who the command runs as; the init stage"},
	{"macos", "Seatbelt on macOS; its reports in the system log"},
	{"performance", "what a launch, the network supervisor, globs, masks and the observer cost"},
	{"troubleshooting", "messages and what to do about them"},
}

// Topics is every topic, in order.
func Topics() []Topic {
	return append([]Topic(nil), topics...)
}

// Source is topic name's markdown as it is in the repository.
func Source(name string) (string, bool) {
	for _, t := range topics {
		if t.Name == name {
			b, err := files.ReadFile("topics/" + name + ".md")
			if err != nil {
				panic("help: topic " + name + " is listed but has no file: " + err.Error())
			}
			return string(b), true
		}
	}
	return "", false
}

// Text is topic name for reading at a terminal or in the man page: the
// markdown, with each link to another topic written as the command that
// prints it.
func Text(name string) (string, bool) {
	src, ok := Source(name)
	if !ok {
		return "", false
	}
	return Unlink(src), true
}

// topicLink is a markdown link to another topic's file, and an anchor in
// it; anchorLink a link to a heading of the same topic. Compiled when
// first used, not at every start of the binary (the init stage inside
// every sandbox is this binary too).
var (
	topicLink  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[([^\]]+)\]\(([a-z]+)\.md(#[a-z0-9_-]*)?\)`) })
	anchorLink = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[([^\]]+)\]\(#[a-z0-9_-]*\)`) })
)

// Unlink writes each link to a topic's file, [text](name.md#anchor), as
// "text (grok-sandbox help name)", and each link to a heading of the same
// topic, [text](#anchor), as its text.
func Unlink(md string) string {
	md = topicLink().ReplaceAllString(md, "$1 (grok-sandbox help $2)")
	return anchorLink().ReplaceAllString(md, "$1")
}

// Links is the topic names md links to, in order, repeats included.
func Links(md string) []string {
	var names []string
	for _, m := range topicLink().FindAllStringSubmatch(md, -1) {
		names = append(names, m[2])
	}
	return names
}

// Names is the topic names, space-separated: what the completion scripts
// offer after help.
func Names() string {
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	return strings.Join(names, " ")
}
