package symbolize

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

//go:noinline
func goTarget(x int) int { return 3*x + 1 }

// TestUserGoFunction names a Go function of the test binary in the test's
// own process. go test links the binary with -s, so the names come from
// .gopclntab; the first version read only .symtab and named no Go function
// of a stripped binary.
func TestUserGoFunction(t *testing.T) {
	pc := uint64(reflect.ValueOf(goTarget).Pointer())
	fn := runtime.FuncForPC(uintptr(pc)).Name()
	m, err := ReadMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	u := NewUser()
	for off, want := range map[uint64]string{
		0: fn + "+0x0 (" + filepath.Base(exe) + ")",
		3: fn + "+0x3 (" + filepath.Base(exe) + ")",
	} {
		if got := u.Symbol(m, pc+off); got != want {
			t.Errorf("Symbol(%s+%d) = %q, want %q", fn, off, got, want)
		}
	}
	if got, want := u.Symbol(m, 8), "0x8"; got != want {
		t.Errorf("unmapped address: got %q, want %q", got, want)
	}
	if got, want := u.Symbol(nil, 0x401000), "0x401000"; got != want {
		t.Errorf("nil maps: got %q, want %q", got, want)
	}
}

// cProgram prints where getpid and main are in its address space, then
// waits to be read.
const cProgram = `#include <stdio.h>
#include <unistd.h>

int main(void) {
	printf("%p %p\n", (void *)getpid, (void *)main);
	fflush(stdout);
	sleep(60);
	return 0;
}
`

// cProgramShifted is cProgram with code before main, so main is at
// another address in the file.
const cProgramShifted = `#include <stdio.h>
#include <unistd.h>

int pad(int x) { volatile int a[64]; for (int i = 0; i < 64; i++) a[i] = x * i; return a[x & 63]; }

int main(void) {
	printf("%p %p %d\n", (void *)getpid, (void *)main, pad(1));
	fflush(stdout);
	sleep(60);
	return 0;
}
`

var (
	pieFlags    = []string{"-fPIE", "-pie"}
	nonPIEFlags = []string{"-fno-pie", "-no-pie"}
)

// buildC compiles src into dir/name.
func buildC(t *testing.T, dir, name, src string, flags ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: cannot build the C test program")
	}
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	args := append([]string{"-O1", "-o", bin, c}, flags...)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// child is a running C test program and the addresses it printed.
type child struct {
	cmd          *exec.Cmd
	getpid, main uint64
}

func startC(t *testing.T, bin string) *child {
	t.Helper()
	cmd := exec.Command(bin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd}
	t.Cleanup(c.stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: read addresses: %v", bin, err)
	}
	if _, err := fmt.Sscanf(line, "%v %v", &c.getpid, &c.main); err != nil {
		t.Fatalf("%s: parse %q: %v", bin, line, err)
	}
	return c
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) stop() {
	if c.cmd.ProcessState == nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
}

func readMaps(t *testing.T, pid int) *Maps {
	t.Helper()
	m, err := ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestUserLibc names getpid in a C program's libc. The program is a PIE:
// a non-PIE one gets the address of its own PLT stub for getpid, which has
// no symbol.
func TestUserLibc(t *testing.T) {
	bin := buildC(t, t.TempDir(), "prog", cProgram, pieFlags...)
	c := startC(t, bin)
	got := NewUser().Symbol(readMaps(t, c.pid()), c.getpid)
	name, lib, ok := strings.Cut(got, " ")
	if !ok || !(strings.HasPrefix(name, "getpid+") || strings.HasPrefix(name, "__getpid+")) ||
		!strings.HasPrefix(lib, "(libc") {
		t.Errorf("Symbol(getpid) = %q, want getpid+0x0 (libc...)", got)
	}
	if !strings.HasSuffix(name, "+0x0") {
		t.Errorf("Symbol(getpid) = %q, want offset 0", got)
	}
}

// TestUserMain names main in a PIE and in a non-PIE executable: the file
// offset maps to main's link-time address through the program headers
// whether or not the executable was loaded where it was linked.
func TestUserMain(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		flags []string
		typ   elf.Type
	}{
		{"pie", pieFlags, elf.ET_DYN},
		{"nopie", nonPIEFlags, elf.ET_EXEC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := buildC(t, dir, tc.name, cProgram, tc.flags...)
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			if f.Type != tc.typ {
				t.Fatalf("%s is %v, want %v", bin, f.Type, tc.typ)
			}
			c := startC(t, bin)
			m := readMaps(t, c.pid())
			u := NewUser()
			for off, want := range map[uint64]string{0: "main+0x0", 5: "main+0x5"} {
				want += " (" + tc.name + ")"
				if got := u.Symbol(m, c.main+off); got != want {
					t.Errorf("Symbol(main+%d) = %q, want %q", off, got, want)
				}
			}
		})
	}
}

// TestUserAfterExit symbolises with a snapshot taken while the process
// ran, after it exited, as the report does for a command that has ended.
func TestUserAfterExit(t *testing.T) {
	bin := buildC(t, t.TempDir(), "prog", cProgram, pieFlags...)
	c := startC(t, bin)
	m := readMaps(t, c.pid())
	c.stop()
	u := NewUser()
	if got, want := u.Symbol(m, c.main+1), "main+0x1 (prog)"; got != want {
		t.Errorf("Symbol(main+1) = %q, want %q", got, want)
	}
	if got := u.Symbol(m, c.getpid); !strings.Contains(got, "getpid+0x0 (libc") {
		t.Errorf("Symbol(getpid) = %q, want getpid in libc", got)
	}
	if errs := u.Unreadable(); len(errs) != 0 {
		t.Errorf("Unreadable() = %v", errs)
	}
}

// TestUserSharesFiles reads a file mapped by two processes once.
func TestUserSharesFiles(t *testing.T) {
	bin := buildC(t, t.TempDir(), "prog", cProgram, pieFlags...)
	u := NewUser()
	for range 2 {
		c := startC(t, bin)
		if got, want := u.Symbol(readMaps(t, c.pid()), c.main), "main+0x0 (prog)"; got != want {
			t.Errorf("Symbol(main) = %q, want %q", got, want)
		}
	}
	if len(u.files) != 1 {
		t.Errorf("%d files cached, want 1", len(u.files))
	}
}

// TestUserReplacedBinary deletes a running program's binary and puts
// another one at its path: the symbols must come from the mapped file,
// through /proc/PID/map_files, not from the file now at the path.
func TestUserReplacedBinary(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: /proc/PID/map_files needs CAP_SYS_ADMIN, run as root to test deleted files")
	}
	dir := t.TempDir()
	bin := buildC(t, dir, "prog", cProgram, pieFlags...)
	other := buildC(t, dir, "other", cProgramShifted, pieFlags...)
	c := startC(t, bin)
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, bin); err != nil {
		t.Fatal(err)
	}
	m := readMaps(t, c.pid())
	if mp := m.find(c.main); mp == nil || !mp.Deleted || mp.Path != bin {
		t.Fatalf("mapping of main = %+v, want %s deleted", mp, bin)
	}
	if got, want := NewUser().Symbol(m, c.main), "main+0x0 (prog)"; got != want {
		t.Errorf("live process: Symbol(main) = %q, want %q", got, want)
	}

	// Once the process is gone the mapped file is out of reach.
	c.stop()
	u := NewUser()
	if got, want := u.Symbol(m, c.main), fmt.Sprintf("%#x (prog)", c.main); got != want {
		t.Errorf("exited process: Symbol(main) = %q, want %q", got, want)
	}
	if errs := u.Unreadable(); len(errs) != 1 || !strings.Contains(errs[0].Error(), bin) {
		t.Errorf("Unreadable() = %v, want one error naming %s", errs, bin)
	}
}
