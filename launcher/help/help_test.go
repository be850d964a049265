package help

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// Every file of topics/ is a listed topic and every listed topic a file
// that starts with its title.
func TestEveryFileIsATopic(t *testing.T) {
	ents, err := fs.ReadDir(files, "topics")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range ents {
		onDisk = append(onDisk, strings.TrimSuffix(e.Name(), ".md"))
	}
	var listed []string
	for _, tp := range Topics() {
		listed = append(listed, tp.Name)
		src, ok := Source(tp.Name)
		if !ok || !strings.HasPrefix(src, "# ") {
			t.Errorf("topic %s: no file, or it does not start with a title: %.40q", tp.Name, src)
		}
		if tp.Summary == "" || strings.Contains(tp.Summary, "\n") {
			t.Errorf("topic %s: the summary must be one line: %q", tp.Name, tp.Summary)
		}
	}
	slices.Sort(onDisk)
	slices.Sort(listed)
	if !slices.Equal(onDisk, listed) {
		t.Errorf("topics/ holds %v, the list is %v", onDisk, listed)
	}
	if _, ok := Source("no-such-topic"); ok {
		t.Error("Source found a topic that does not exist")
	}
}

// Every link between topics leads to a topic, and printing writes it as
// the command that prints that topic.
func TestLinksLeadToTopics(t *testing.T) {
	for _, tp := range Topics() {
		src, _ := Source(tp.Name)
		for _, name := range Links(src) {
			if _, ok := Source(name); !ok {
				t.Errorf("topic %s links to %s.md, which is no topic", tp.Name, name)
			}
		}
		text, _ := Text(tp.Name)
		if strings.Contains(text, ".md)") || strings.Contains(text, "](#") {
			t.Errorf("topic %s still has a link once printed", tp.Name)
		}
	}
}

func TestUnlink(t *testing.T) {
	for in, want := range map[string]string{
		"see [network](network.md).":                                    "see network (grok-sandbox help network).",
		"see [who runs](backends.md#who-the-command-runs-as)":           "see who runs (grok-sandbox help backends)",
		"[integrity across launches](#integrity-across-launches) below": "integrity across launches below",
		"[bubblewrap](https://github.com/containers/bubblewrap)":        "[bubblewrap](https://github.com/containers/bubblewrap)",
	} {
		if got := Unlink(in); got != want {
			t.Errorf("Unlink(%q) = %q, want %q", in, got, want)
		}
	}
}
