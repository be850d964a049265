package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Record is one line of the log as read back: the event, or why the line
// could not be read (Bad: not JSON, or a truncated last line), and the
// line as stored.
type Record struct {
	Event Event
	Raw   string
	Bad   string
}

// OpenRead opens a log file for reading the way the launcher opens it for
// writing: never through a link, never blocking on a FIFO, only a regular
// file of yours with one name. A missing file is (nil, nil).
func OpenRead(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %v", path, err)
	}
	if err := checkOwnFile(fd, path); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Paths are the log's files in GROK_HOME, oldest first.
func Paths(grokHome string) []string {
	return []string{filepath.Join(grokHome, Name+".1"), filepath.Join(grokHome, Name)}
}

// ParseLines splits data into records. A last line without its newline is
// kept in rest (it may be half written), unless final, when it is bad.
func ParseLines(data []byte, final bool) (recs []Record, rest []byte) {
	for len(data) > 0 {
		i := strings.IndexByte(string(data), '\n')
		if i < 0 {
			if !final {
				return recs, data
			}
			recs = append(recs, Record{Raw: string(data), Bad: "a truncated last line"})
			return recs, nil
		}
		line := strings.TrimRight(string(data[:i]), "\r")
		data = data[i+1:]
		if strings.TrimSpace(line) == "" {
			continue
		}
		var ev Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Event == "" {
			recs = append(recs, Record{Raw: line, Bad: "not an event (not JSON)"})
			continue
		}
		recs = append(recs, Record{Event: ev, Raw: line})
	}
	return recs, nil
}

// ReadAll reads every record of the log in grokHome, the rotated file's
// first.
func ReadAll(grokHome string) ([]Record, error) {
	var out []Record
	for _, path := range Paths(grokHome) {
		f, err := OpenRead(path)
		if err != nil {
			return out, err
		}
		if f == nil {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(f, 4*Max))
		f.Close()
		if err != nil {
			return out, fmt.Errorf("%s: %v", path, err)
		}
		recs, _ := ParseLines(data, true)
		out = append(out, recs...)
	}
	return out, nil
}
