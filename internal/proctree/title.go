package proctree

import (
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Title is the name a process gives itself beyond its 15-byte comm, from
// its command line (/proc/PID/cmdline), or "" when it gives none:
//
//   - a title it set over its argv (setproctitle, PostgreSQL's
//     "postgres: walwriter", "postgres: app db [local] UPDATE", nginx's
//     "nginx: worker process"): argv[0] with a space in it that is not a
//     path, its other arguments cleared;
//   - a script run by an interpreter ("python3 -u app.py": app.py;
//     "python3 -m http.server": http.server; "node server.js"; "perl",
//     "ruby", "php"), which comm names only as the interpreter.
func Title(cmdline []byte) string {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) == 0 || args[0] == "" {
		return ""
	}
	a0 := strings.TrimSpace(args[0])
	if strings.ContainsRune(a0, ' ') && !strings.HasPrefix(a0, "/") && nonEmpty(args[1:]) == 0 {
		return printableTitle(a0)
	}
	if !Interpreter(filepath.Base(a0)) {
		return ""
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-m" && i+1 < len(args):
			return printableTitle(args[i+1])
		case a == "-c" || a == "-e" || a == "--eval":
			return "" // inline code: the interpreter's name is all there is
		case strings.HasPrefix(a, "-"):
			continue
		case a != "":
			return printableTitle(filepath.Base(a))
		}
	}
	return ""
}

// Interpreter says whether name (a program's, or a comm, which the kernel
// cuts to 15 bytes) runs scripts whose name matters more than its own:
// python3.11, node, perl, ruby, php, ...
func Interpreter(name string) bool {
	for _, p := range []string{"python", "node", "nodejs", "perl", "ruby", "php", "Rscript", "deno", "bun"} {
		if name == p || strings.HasPrefix(name, p) && strings.Trim(name[len(p):], "0123456789.") == "" {
			return true
		}
	}
	return false
}

func nonEmpty(args []string) int {
	n := 0
	for _, a := range args {
		if strings.TrimSpace(a) != "" {
			n++
		}
	}
	return n
}

// printableTitle drops control characters (a title is the process's to
// set) and the spaces around what is left, and keeps 128 bytes at most,
// cut between characters.
func printableTitle(s string) string {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s))
	if len(s) > maxTitle {
		cut := maxTitle
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = strings.TrimSpace(s[:cut])
	}
	return s
}

// maxTitle is the longest title kept, in bytes.
const maxTitle = 128

// Program is the program a thread belongs to: the first word of its
// process's title ("postgres" of "postgres: walwriter", the script an
// interpreter runs), or its comm without a title.
func Program(comm, title string) string {
	if title == "" {
		return comm
	}
	p, _, _ := strings.Cut(title, " ")
	if p = strings.TrimSuffix(p, ":"); p == "" {
		return comm
	}
	return filepath.Base(p)
}

// Role names the part a thread of program prog (Program, or its
// process's main thread's comm) plays in it, so that threads of
// one part group together: a PostgreSQL process by its title's role
// ("postgres: walwriter", every client's backend "postgres: backend"), an
// nginx worker by its title, a named thread by its name with its numbers
// cut ("mysqld/ib_io_wr-N"), else the program.
func Role(comm, title, prog string) string {
	rest := ""
	if f, r, ok := strings.Cut(title, " "); ok && strings.HasSuffix(f, ":") {
		rest = strings.TrimSpace(r)
	}
	if rest != "" {
		for _, aux := range pgAux {
			if strings.HasPrefix(rest, aux) {
				return prog + ": " + aux
			}
		}
		if prog == "postgres" || prog == "postmaster" {
			return prog + ": backend" // "USER DB HOST STATEMENT"
		}
		return prog + ": " + numbered.ReplaceAllString(rest, "N")
	}
	if c := numbered.ReplaceAllString(comm, "N"); comm != prog && !strings.HasPrefix(prog, comm) && !strings.HasPrefix(comm, prog) && !Interpreter(comm) {
		return prog + "/" + c
	}
	return prog
}

// pgAux are the titles of PostgreSQL's own processes (its backends'
// titles are their user, database, client and statement).
var pgAux = []string{"checkpointer", "background writer", "walwriter", "autovacuum launcher", "autovacuum worker",
	"logical replication launcher", "logical replication worker", "stats collector", "archiver", "walsender", "walreceiver",
	"startup", "walsummarizer", "io worker", "parallel worker", "background worker"}

// numbered matches the numbers that tell threads of one kind apart.
var numbered = regexp.MustCompile(`[0-9]+`)
