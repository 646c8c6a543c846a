package symbolize

import (
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const mapsFixture = `55dc98b27000-55dc98b29000 r--p 00000000 fe:00 247026                     /usr/bin/cat
55dc98b29000-55dc98b2e000 r-xp 00002000 fe:00 247026                     /usr/bin/cat
55dcaf855000-55dcaf876000 rw-p 00000000 00:00 0                          [heap]
7f29c04af000-7f29c04d1000 rwxp 00000000 00:00 0 
7f29c055a000-7f29c06b0000 r-xp 00026000 103:02 326269                    /opt/my app/libx.so (deleted)
7ffc1e5f2000-7ffc1e5f4000 r-xp 00000000 00:00 0                          [vdso]
`

func TestParseMaps(t *testing.T) {
	got, err := parseMaps(strings.NewReader(mapsFixture))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x55dc98b29000, End: 0x55dc98b2e000, Offset: 0x2000, Dev: unix.Mkdev(0xfe, 0), Inode: 247026, Path: "/usr/bin/cat"},
		{Start: 0x7f29c055a000, End: 0x7f29c06b0000, Offset: 0x26000, Dev: unix.Mkdev(0x103, 2), Inode: 326269,
			Path: "/opt/my app/libx.so", Deleted: true},
		{Start: 0x7ffc1e5f2000, End: 0x7ffc1e5f4000, Path: "[vdso]"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseMaps:\n got %+v\nwant %+v", got, want)
	}

	m := &Maps{Mappings: got}
	for _, tc := range []struct {
		addr uint64
		want string // path, "" for none
	}{
		{0x55dc98b28fff, ""}, // not executable
		{0x55dc98b29000, "/usr/bin/cat"},
		{0x55dc98b2dfff, "/usr/bin/cat"},
		{0x55dc98b2e000, ""},
		{0x7f29c04af010, ""}, // anonymous (JIT) code
		{0x7ffc1e5f2100, "[vdso]"},
		{0x7fffffffffff, ""},
	} {
		got := ""
		if mp := m.find(tc.addr); mp != nil {
			got = mp.Path
		}
		if got != tc.want {
			t.Errorf("find(%#x) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

func TestParseMapsBadLine(t *testing.T) {
	for _, line := range []string{
		"55dc98b29000 r-xp 00002000 fe:00 247026 /usr/bin/cat",       // no end address
		"55dc98b29000-55dc98b2e000 r-xp 00002000 fe00 247026 /bin/x", // no minor
		"55dc98b29000-55dc98b2e000 r-xp",
	} {
		if _, err := parseMaps(strings.NewReader(line + "\n")); err == nil {
			t.Errorf("parseMaps(%q): no error", line)
		}
	}
}

// TestReadMapsSelf finds the test binary among the test's own mappings.
func TestReadMapsSelf(t *testing.T) {
	m, err := ReadMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(exe, &st); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mp := range m.Mappings {
		if mp.Path == exe {
			found = true
			if mp.Inode != st.Ino || mp.Dev != st.Dev {
				t.Errorf("%s: dev %#x inode %d in maps, %#x %d from stat", exe, mp.Dev, mp.Inode, st.Dev, st.Ino)
			}
		}
	}
	if !found {
		t.Errorf("no executable mapping of %s in %+v", exe, m.Mappings)
	}
	if _, err := ReadMaps(-1); err == nil {
		t.Error("ReadMaps(-1): no error")
	}
}
