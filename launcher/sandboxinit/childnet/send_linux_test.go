package childnet

import (
	"encoding/binary"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSliceIOV(t *testing.T) {
	iov := []unix.RemoteIovec{{Base: 100, Len: 10}, {Base: 200, Len: 0}, {Base: 300, Len: 5}}
	for _, c := range []struct {
		off, max int
		want     []unix.RemoteIovec
		size     int
	}{
		{0, 100, []unix.RemoteIovec{{Base: 100, Len: 10}, {Base: 300, Len: 5}}, 15},
		{0, 4, []unix.RemoteIovec{{Base: 100, Len: 4}}, 4},
		{8, 4, []unix.RemoteIovec{{Base: 108, Len: 2}, {Base: 300, Len: 2}}, 4},
		{10, 100, []unix.RemoteIovec{{Base: 300, Len: 5}}, 5},
		{15, 100, nil, 0},
	} {
		got, size := sliceIOV(iov, c.off, c.max)
		if size != c.size || len(got) != len(c.want) {
			t.Errorf("sliceIOV(off %d, max %d) = %v, %d; want %v, %d", c.off, c.max, got, size, c.want, c.size)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("sliceIOV(off %d, max %d) = %v; want %v", c.off, c.max, got, c.want)
			}
		}
	}
}

// cmsg builds one control message as the kernel reads it.
func cmsg(level, typ int32, data []byte) []byte {
	l := unix.SizeofCmsghdr + len(data)
	b := make([]byte, (l+7)&^7)
	binary.LittleEndian.PutUint64(b, uint64(l))
	binary.LittleEndian.PutUint32(b[8:], uint32(level))
	binary.LittleEndian.PutUint32(b[12:], uint32(typ))
	copy(b[unix.SizeofCmsghdr:], data)
	return b
}

// The caller's descriptors become this process's copies, credentials that
// claim the caller's own process become this one's, and what the kernel
// would refuse is refused.
func TestTranslateControl(t *testing.T) {
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Skipf("pidfd_open: %v", err)
	}
	defer unix.Close(pidfd)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// This process plays the caller.
	me := os.Getpid()
	k := &sendCall{pidfd: pidfd, tgid: me}
	k.n.Pid = me

	fds := make([]byte, 4)
	binary.LittleEndian.PutUint32(fds, uint32(w.Fd()))
	ucred := make([]byte, 12)
	binary.LittleEndian.PutUint32(ucred, uint32(me))
	binary.LittleEndian.PutUint32(ucred[4:], uint32(os.Getuid()))
	binary.LittleEndian.PutUint32(ucred[8:], uint32(os.Getgid()))
	ctl := append(cmsg(unix.SOL_SOCKET, unix.SCM_RIGHTS, fds), cmsg(unix.SOL_SOCKET, unix.SCM_CREDENTIALS, ucred)...)
	ctl = append(ctl, cmsg(unix.IPPROTO_IP, unix.IP_TOS, []byte{1, 0, 0, 0})...)
	m := outMsg{target: -1}
	if errno := k.translateControl(&m, ctl); errno != 0 {
		t.Fatalf("translateControl: %v", errno)
	}
	defer m.release()
	if len(m.fds) != 1 {
		t.Fatalf("copies: %v, want one", m.fds)
	}
	got := int(binary.LittleEndian.Uint32(ctl[unix.SizeofCmsghdr:]))
	if got != m.fds[0] || got == int(w.Fd()) {
		t.Errorf("SCM_RIGHTS carries %d, want this process's copy %d", got, m.fds[0])
	}
	var a, b unix.Stat_t
	if unix.Fstat(got, &a) != nil || unix.Fstat(int(w.Fd()), &b) != nil || a.Ino != b.Ino {
		t.Errorf("the copy is not of the caller's descriptor")
	}
	cred := ctl[len(cmsg(unix.SOL_SOCKET, unix.SCM_RIGHTS, fds))+unix.SizeofCmsghdr:]
	if pid := binary.LittleEndian.Uint32(cred); int(pid) != os.Getpid() {
		t.Errorf("SCM_CREDENTIALS claims pid %d, want this process's %d", pid, os.Getpid())
	}

	for _, c := range []struct {
		what          string
		pid, uid, gid uint32
	}{
		{"another process", uint32(me) + 1, uint32(os.Getuid()), uint32(os.Getgid())},
		{"another uid", uint32(me), uint32(os.Getuid()) + 12345, uint32(os.Getgid())},
		{"another gid", uint32(me), uint32(os.Getuid()), uint32(os.Getgid()) + 12345},
	} {
		binary.LittleEndian.PutUint32(ucred, c.pid)
		binary.LittleEndian.PutUint32(ucred[4:], c.uid)
		binary.LittleEndian.PutUint32(ucred[8:], c.gid)
		m2 := outMsg{target: -1}
		if errno := k.translateControl(&m2, cmsg(unix.SOL_SOCKET, unix.SCM_CREDENTIALS, ucred)); errno != unix.EPERM {
			t.Errorf("credentials of %s: %v, want EPERM", c.what, errno)
		}
	}
	// More descriptors than the kernel passes in one message: refused
	// before any is copied.
	many := make([]byte, 4*(scmMaxFD+1))
	for i := 0; i < scmMaxFD+1; i++ {
		binary.LittleEndian.PutUint32(many[4*i:], uint32(w.Fd()))
	}
	m5 := outMsg{target: -1}
	if errno := k.translateControl(&m5, cmsg(unix.SOL_SOCKET, unix.SCM_RIGHTS, many)); errno != unix.EINVAL || len(m5.fds) != 0 {
		t.Errorf("%d descriptors: %v with %d copied, want EINVAL and none", scmMaxFD+1, errno, len(m5.fds))
	}
	bad := cmsg(unix.SOL_SOCKET, unix.SCM_RIGHTS, fds)
	binary.LittleEndian.PutUint64(bad, 64) // longer than the buffer
	m3 := outMsg{target: -1}
	if errno := k.translateControl(&m3, bad); errno != unix.EINVAL {
		t.Errorf("a message longer than the buffer: %v, want EINVAL", errno)
	}
	binary.LittleEndian.PutUint32(fds, 1<<20) // no such descriptor
	m4 := outMsg{target: -1}
	if errno := k.translateControl(&m4, cmsg(unix.SOL_SOCKET, unix.SCM_RIGHTS, fds)); errno != unix.EBADF {
		t.Errorf("a descriptor the caller does not have: %v, want EBADF", errno)
	}
	m4.release()
}
