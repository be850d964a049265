package initbin

import "testing"

// The mode-bit answer, where faccessat2 cannot be asked, is the kernel's
// for each class of user.
func TestModeAllows(t *testing.T) {
	for _, c := range []struct {
		name       string
		mode       uint32
		euid, egid int
		groups     []int
		want       bool
	}{
		{"root, the owner's bit only", 0o744, 0, 0, nil, true},
		{"root, no bit", 0o644, 0, 0, nil, false},
		{"the owner, its bit", 0o700, 1000, 1000, nil, true},
		{"the owner, only others' bit", 0o605, 1000, 1000, nil, false},
		{"the group by egid", 0o750, 2000, 1000, nil, true},
		{"the group by a supplementary group", 0o750, 2000, 3000, []int{1000}, true},
		{"the group, only others' bit", 0o705, 2000, 1000, nil, false},
		{"another user, others' bit", 0o701, 2000, 3000, nil, true},
		{"another user, owner's and group's bits", 0o770, 2000, 3000, nil, false},
	} {
		if got := modeAllows(c.mode, 1000, 1000, c.euid, c.egid, c.groups); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
