package symbolize

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestLoadKernelFixture(t *testing.T) {
	k, err := LoadKernel("testdata/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr uint64
		want string
	}{
		{0xffffffff81000000, "srso_alias_untrain_ret+0x0"}, // aliases: fewest leading underscores
		{0xffffffff810000f8, "__pfx_do_one+0x8"},
		{0xffffffff81000100, "do_one+0x0"},
		{0xffffffff8100017f, "do_one+0x7f"},
		{0xffffffff81000190, "helper.isra.0+0x10"}, // local (t) symbol
		{0xffffffff81000200, "0xffffffff81000200"}, // data ends the function before it
		{0xffffffff81000fff, "0xffffffff81000fff"},
		{0xffffffff81001004, "weak_func+0x4"},  // fewer underscores than its alias
		{0xffffffff81002008, "zzz_globl+0x8"},  // T over t
		{0xffffffffc0201004, "mod_func+0x4"},   // module name dropped
		{0xffffffffc0201090, "mod_other+0x10"}, // last symbol: up to the page after its start
		{0xffffffffc0202fff, "mod_other+0x1f7f"},
		{0xffffffffc0203000, "0xffffffffc0203000"}, // beyond it
		{0xffffffff80000000, "0xffffffff80000000"}, // below the kernel
		{0x1f010, "0x1f010"},                       // per-CPU (A) symbols are not code
	} {
		if got := k.Symbol(tc.addr); got != tc.want {
			t.Errorf("Symbol(%#x) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

func TestLoadKernelRestricted(t *testing.T) {
	_, err := LoadKernel("testdata/kallsyms-restricted")
	if !errors.Is(err, ErrKernelHidden) {
		t.Fatalf("err = %v, want ErrKernelHidden", err)
	}
	if !strings.Contains(err.Error(), "kptr_restrict") {
		t.Errorf("error %q does not name kptr_restrict", err)
	}
}

func TestLoadKernelBadInput(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"empty":       "",
		"bad-address": "ffffffffzz000000 T _text\n",
	} {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKernel(p); err == nil || errors.Is(err, ErrKernelHidden) {
			t.Errorf("%s: err = %v, want a parse error", name, err)
		}
	}
	if _, err := LoadKernel(dir + "/missing"); err == nil {
		t.Error("missing file: no error")
	}
}

func TestNilKernelPrintsHex(t *testing.T) {
	var k *Kernel
	if got := k.Symbol(0xffffffff81000100); got != "0xffffffff81000100" {
		t.Errorf("got %q", got)
	}
}

// TestLoadKernelLive resolves a function of the running kernel, found in
// /proc/kallsyms, through LoadKernel.
func TestLoadKernelLive(t *testing.T) {
	k, err := LoadKernel("/proc/kallsyms")
	if errors.Is(err, ErrKernelHidden) {
		t.Skip("kernel addresses hidden (kptr_restrict): run as root to test against /proc/kallsyms")
	}
	if err != nil {
		t.Fatal(err)
	}
	addr := kallsymsAddr(t, "schedule")
	if got, want := k.Symbol(addr+1), "schedule+0x1"; got != want {
		t.Errorf("Symbol(schedule+1) = %q, want %q", got, want)
	}
}

func kallsymsAddr(t *testing.T, name string) uint64 {
	t.Helper()
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 3 && fs[2] == name && (fs[1] == "T" || fs[1] == "t") {
			a, err := strconv.ParseUint(fs[0], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
	}
	t.Fatalf("%s not in /proc/kallsyms", name)
	return 0
}
