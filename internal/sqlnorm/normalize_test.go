package sqlnorm

import (
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"INSERT INTO t VALUES (1, 'abc', 2.5e-3, X'01ff', NULL)", "INSERT INTO t VALUES (?, ?, ?, ?, NULL)"},
		{"insert into t(a,b) values(?1, :name)", "insert into t(a,b) values(?, ?)"},
		{"SELECT * FROM t WHERE id = @id AND x = $x", "SELECT * FROM t WHERE id = ? AND x = ?"},
		{"SELECT  count(*)\n\tFROM   t -- all of it\n", "SELECT count(*) FROM t"},
		{"SELECT /* hint */ a FROM t", "SELECT a FROM t"},
		{"SELECT 'it''s', \"col\"\"x\", [a b], `c` FROM t1", "SELECT ?, \"col\"\"x\", [a b], `c` FROM t1"},
		{"SELECT t1.a, t2.b FROM t1 JOIN t2 ON t1.id=t2.id", "SELECT t1.a, t2.b FROM t1 JOIN t2 ON t1.id=t2.id"},
		{"SELECT 0x1F, .5, 1_000, -7", "SELECT ?, ?, ?, ?"},
		// A sign is the constant's (pgbench's deltas are both signs);
		// a minus after an operand subtracts.
		{"UPDATE a SET b = b + -1234 WHERE aid = 5;", "UPDATE a SET b = b + ? WHERE aid = ?;"},
		{"SELECT x = -5, (-5), a -1, a - 1, f(x)-2", "SELECT x = ?, (?), a -?, a - ?, f(x)-?"},
		{"UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;", "UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?;"},
		{"SELECT x::int, E'a\\n', $$body$$, $f$ x $f$", "SELECT x::int, ?, ?, ?"},
		{"SELECT a<=b, a <> b, a||b", "SELECT a<=b, a <> b, a||b"},
		{"BEGIN", "BEGIN"},
		{"   ", ""},
		{"SELECT 'unterminated", "SELECT ?"},
		{"SELECT a /* unterminated", "SELECT a"},
		{"SELECT naïve_col, 名前 FROM données", "SELECT naïve_col, 名前 FROM données"},
	} {
		if got := Normalize(c.in, 0); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestNormalizeHostile: a statement's text comes from the traced program;
// escape sequences and invalid UTF-8 must not reach a terminal raw.
func TestNormalizeHostile(t *testing.T) {
	got := Normalize("SELECT \x1b[2J\x1b]0;owned\x07 FROM \xff\xfe t", 0)
	if strings.ContainsAny(got, "\x1b\x07") || !strings.Contains(got, `\x1b`) || !strings.Contains(got, `\xff`) {
		t.Errorf("hostile text not escaped: %q", got)
	}
}

func TestNormalizeCut(t *testing.T) {
	long := "SELECT " + strings.Repeat("a, ", 200) + "b FROM t"
	got := Normalize(long, 40)
	if n := len([]rune(got)); n != 40 || !strings.HasSuffix(got, "…") {
		t.Errorf("cut to 40: %d characters, %q", n, got)
	}
	if got := Normalize("SELECT 1", 40); got != "SELECT ?" {
		t.Errorf("short text cut: %q", got)
	}
	// Literals of different lengths give one key, so a cut never splits
	// one statement's executions into several keys.
	a := Normalize("INSERT INTO t VALUES ('"+strings.Repeat("x", 500)+"')", 30)
	b := Normalize("INSERT INTO t VALUES ('y')", 30)
	if a != b {
		t.Errorf("same statement, two keys: %q and %q", a, b)
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"SELECT 1", "'", "$$", "$a$", "/*", "--", "[", "?9", "x'", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Normalize(s, 50)
		if n := len([]rune(got)); n > 50 {
			t.Errorf("%q: %d characters", s, n)
		}
		if strings.ContainsAny(got, "\x1b\x00\n\r") {
			t.Errorf("%q: control character in %q", s, got)
		}
		if Normalize(got, 0) != Normalize(got, 0) {
			t.Errorf("not deterministic")
		}
	})
}
