package symbolize

import "testing"

func TestBuildTable(t *testing.T) {
	tab := buildTable([]candidate{
		{sym: sym{addr: 0x1000, size: 0x10, name: "sized"}, bind: bindGlobal, limit: 0x3000},
		{sym: sym{addr: 0x1040, name: "unsized"}, bind: bindGlobal, limit: 0x3000},
		{sym: sym{addr: 0x1080, name: "alias_unsized"}, bind: bindGlobal, limit: 0x3000},
		{sym: sym{addr: 0x1080, size: 0x20, name: "__alias_sized"}, bind: bindLocal, limit: 0x3000},
		{sym: sym{addr: 0x2000, name: "last"}, bind: bindWeak, limit: 0x2100},
		{sym: sym{addr: 0x2100, name: "empty"}, bind: bindGlobal, limit: 0x2100}, // at its section's end
	})
	for _, tc := range []struct {
		addr uint64
		want string // "" for none
	}{
		{0xfff, ""},
		{0x1000, "sized+0x0"},
		{0x100f, "sized+0xf"},
		{0x1010, ""}, // past a sized symbol
		{0x107f, "unsized+0x3f"},
		{0x1080, "__alias_sized+0x0"}, // sized alias wins
		{0x10a0, ""},
		{0x20ff, "last+0xff"},
		{0x2100, ""}, // unsized ends at its section's end
	} {
		got := ""
		if name, off, ok := tab.lookup(tc.addr); ok {
			got = withOffset(name, off)
		}
		if got != tc.want {
			t.Errorf("lookup(%#x) = %q, want %q", tc.addr, got, tc.want)
		}
	}
	if len(tab) != 4 {
		t.Errorf("table has %d entries, want 4: %+v", len(tab), tab)
	}
}

func TestFunction(t *testing.T) {
	for in, want := range map[string]string{
		"work+0x39 (cpuscen)":              "work (cpuscen)",
		"_raw_spin_unlock_irqrestore+0x19": "_raw_spin_unlock_irqrestore",
		"0x7f12ab (libc.so.6)":             "0x7f12ab (libc.so.6)",
		"0xffffffff81000000":               "0xffffffff81000000",
		"a+b+0x1f":                         "a+b",
		"main.f+0x10 (x+0x1)":              "main.f (x+0x1)",
	} {
		if got := Function(in); got != want {
			t.Errorf("Function(%q) = %q, want %q", in, got, want)
		}
	}
}
