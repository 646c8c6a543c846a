package timeacct

import (
	"slices"
	"strings"
	"testing"
)

func TestParseKallsyms(t *testing.T) {
	in := `ffffffff81000000 T _stext
ffffffff8158bc20 t __filemap_fdatawait_range
ffffffff8158c000 T filemap_fdatawrite
ffffffff8158f0d0 T filemap_read
ffffffff8158f400 t filemap_read_folio
ffffffff821fbb40 t __mutex_lock.constprop.0
ffffffff821fc570 t __mutex_lock_killable_slowpath
ffffffff821fc5e0 t something_else
ffffffff8159a730 t balance_dirty_pages
ffffffff8159b400 T balance_dirty_pages_ratelimited_flags
ffffffff81219cb3 t jbd2_log_wait_commit.cold
ffffffff81219d00 t next_cold
ffffffff814330e0 t tick_nohz_handler
ffffffff81433200 t after_tick
ffffffffc0001000 t filemap_fault	[some_module]
ffffffffc0002000 t other	[some_module]
`
	got, tick, err := parseKallsyms(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if tick != 0xffffffff814330e0 {
		t.Errorf("tick function at %#x, want tick_nohz_handler's 0xffffffff814330e0", tick)
	}
	want := []symRange{
		{"__mutex_lock.constprop.0", 0xffffffff821fbb40, 0xffffffff821fc570, classLock},
		{"__mutex_lock_killable_slowpath", 0xffffffff821fc570, 0xffffffff821fc5e0, classLock},
		{"__filemap_fdatawait_range", 0xffffffff8158bc20, 0xffffffff8158c000, classSync},
		{"jbd2_log_wait_commit.cold", 0xffffffff81219cb3, 0xffffffff81219d00, classSync},
		{"balance_dirty_pages", 0xffffffff8159a730, 0xffffffff8159b400, classWrite},
		{"filemap_read", 0xffffffff8158f0d0, 0xffffffff8158f400, classRead},
	}
	slices.SortStableFunc(got, func(a, b symRange) int { return a.class - b.class })
	if !slices.EqualFunc(got, want, func(a, b symRange) bool { return a == b }) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestParseKallsymsHidden(t *testing.T) {
	// Without privilege every address reads as zero: no ranges, no error.
	got, tick, err := parseKallsyms(strings.NewReader("0000000000000000 T filemap_read\n0000000000000000 T tick_nohz_handler\n"))
	if err != nil || len(got) != 0 || tick != 0 {
		t.Errorf("got %v, tick %#x, %v; want no ranges and no tick", got, tick, err)
	}
}

func TestStopWithoutStart(t *testing.T) {
	// Stop is safe on a probe that never started (Start returned nil).
	var p *Probe
	if _, err := p.Stop(); err == nil {
		t.Error("Stop on a nil probe: want an error")
	}
}

func TestStartBadPID(t *testing.T) {
	for _, pid := range []int{0, -1} {
		if _, err := Start(Config{Roots: []int{pid}}); err == nil {
			t.Errorf("Start(RootPID %d): want an error", pid)
		}
	}
}
