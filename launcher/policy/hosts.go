package policy

import (
	"net/netip"
	"strconv"
	"strings"
)

// HostRule is one allow_hosts entry: a name, a "*." wildcard (which does
// not match the bare domain) or an IP literal, and a port (0: 80 and 443).
type HostRule struct {
	Host     string `json:"host"` // lower case, no "*." and no trailing dot; an IP in its canonical form
	Wildcard bool   `json:"wildcard,omitempty"`
	IP       bool   `json:"ip,omitempty"`
	Port     int    `json:"port,omitempty"`
}

// String is the entry in its canonical spelling.
func (r HostRule) String() string {
	h := r.Host
	if r.Wildcard {
		h = "*." + h
	}
	if r.Port == 0 {
		return h
	}
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(r.Port)
}

// Allows reports whether host (a name or an IP literal, as a client asked
// for it) and port match the rule.
func (r HostRule) Allows(host string, port int) bool {
	if r.Port == 0 {
		if port != 80 && port != 443 {
			return false
		}
	} else if port != r.Port {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return r.IP && a.Unmap().String() == r.Host
	}
	if r.IP {
		return false
	}
	if r.Wildcard {
		return strings.HasSuffix(host, "."+r.Host)
	}
	return host == r.Host
}

// ParseHostRule parses an allow_hosts entry: "name", "*.name", "1.2.3.4",
// "[::1]", each with an optional ":port". The message says what is wrong.
func ParseHostRule(s string) (HostRule, string) {
	if strings.ContainsAny(s, "\n\r\x00") {
		return HostRule{}, "must be one line"
	}
	if strings.TrimSpace(s) != s || s == "" {
		return HostRule{}, "must be a host name, *.domain or IP address with an optional :port, without spaces"
	}
	host, port := s, 0
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return HostRule{}, "has an unclosed [ (write an IPv6 address as [::1] or [::1]:8080)"
		}
		host = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return HostRule{}, "has text after ] that is not :port"
			}
			p, msg := parsePort(rest[1:])
			if msg != "" {
				return HostRule{}, msg
			}
			port = p
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return HostRule{}, "has " + strconv.Quote(host) + " in brackets, which is not an IPv6 address"
		}
		return HostRule{Host: a.Unmap().String(), IP: true, Port: port}, ""
	}
	if strings.Count(s, ":") > 1 {
		return HostRule{}, "looks like an IPv6 address: write it in brackets ([::1] or [::1]:8080)"
	}
	if h, p, ok := strings.Cut(s, ":"); ok {
		n, msg := parsePort(p)
		if msg != "" {
			return HostRule{}, msg
		}
		host, port = h, n
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return HostRule{Host: a.Unmap().String(), IP: true, Port: port}, ""
	}
	wild := strings.HasPrefix(host, "*.")
	name := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "*."), "."))
	if msg := checkHostName(name); msg != "" {
		return HostRule{}, msg
	}
	if wild && !strings.Contains(name, ".") {
		return HostRule{}, "has a wildcard over a top-level domain (*." + name + "); name a domain such as *.example.net"
	}
	return HostRule{Host: name, Wildcard: wild, Port: port}, ""
}

func parsePort(p string) (int, string) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
		return 0, "has port " + strconv.Quote(p) + "; a port is a number from 1 to 65535"
	}
	return n, ""
}

func checkHostName(name string) string {
	if name == "" || len(name) > 253 {
		return "is not a host name (1 to 253 characters)"
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return "is not a host name: each dot-separated label has 1 to 63 characters"
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return "is not a host name: a label cannot begin or end with -"
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				if c == '*' {
					return "has a * that is not a leading *. (only *.domain is a wildcard)"
				}
				return "is not a host name: only letters, digits, - and _ (and a leading *.)"
			}
		}
	}
	return ""
}
