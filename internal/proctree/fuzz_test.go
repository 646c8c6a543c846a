package proctree

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzStat: the state and parent of a stat line the kernel could write
// come back whatever the comm holds (spaces, parentheses, newlines), and
// any other bytes never panic.
func FuzzStat(f *testing.F) {
	f.Add("bash", byte('S'), 1)
	f.Add("a) R 7 (b", byte('D'), 0)
	f.Add(")", byte('Z'), 2147483647)
	f.Add("x\n1 (y) R 5", byte('R'), 3)
	f.Fuzz(func(t *testing.T, comm string, state byte, ppid int) {
		for i := range 3 {
			raw := comm[:min(len(comm), i*len(comm)/2)]
			StatState([]byte(raw))
			StatComm([]byte(raw))
			StatPPID(raw)
		}
		if strings.ContainsRune(comm, 0) || len(comm) > 64 || state < 'A' || state > 'Z' || ppid < 0 {
			t.Skip("not something the kernel writes")
		}
		line := fmt.Sprintf("4242 (%s) %c %d 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 99 1000 10 %d\n", comm, state, ppid, ^uint64(0))
		if got := StatState([]byte(line)); got != state {
			t.Errorf("StatState(%q) = %q, want %q", line, got, state)
		}
		if got := StatComm([]byte(line)); got != comm {
			t.Errorf("StatComm(%q) = %q, want %q", line, got, comm)
		}
		if got, ok := StatPPID(line); !ok || got != ppid {
			t.Errorf("StatPPID(%q) = %d %v, want %d", line, got, ok, ppid)
		}
	})
}

// FuzzTitle: whatever a process writes over its command line, its title
// is printable, one line of 128 bytes at most, valid UTF-8 when the
// command line is, and the program and role made from it never panic.
func FuzzTitle(f *testing.F) {
	f.Add([]byte("postgres: walwriter \x00\x00"), "postgres")
	f.Add([]byte("python3\x00-m\x00http.server\x00"), "python3")
	f.Add([]byte("\x01 \x01"), "x")
	f.Add([]byte(strings.Repeat("é", 100)+" x"), "x")
	f.Fuzz(func(t *testing.T, cmdline []byte, comm string) {
		title := Title(cmdline)
		if len(title) > 128 {
			t.Errorf("Title(%q) = %q: %d bytes", cmdline, title, len(title))
		}
		if strings.ContainsFunc(title, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Errorf("Title(%q) = %q holds a control character", cmdline, title)
		}
		if strings.TrimSpace(title) != title {
			t.Errorf("Title(%q) = %q: spaces around it", cmdline, title)
		}
		if utf8.Valid(cmdline) && !utf8.ValidString(title) {
			t.Errorf("Title(%q) = %q: not UTF-8", cmdline, title)
		}
		prog := Program(comm, title)
		Role(comm, title, prog)
		Role(comm, string(cmdline), prog)
	})
}
