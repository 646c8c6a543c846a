// Package sqlnorm turns the text of an SQL statement into the key its
// executions are grouped by: literals and parameters become ?, comments go,
// runs of white space become one space, and the text is cut to a length.
// It is what pg_stat_statements and SQLite's own sqlite3_normalized_sql do
// (the latter is compiled out of Debian's library), kept simple: the SQL is
// scanned as tokens, not parsed, so any text gives a key and nothing in it
// can fail.
//
// The keywords keep the case they were written in: a user finds the
// statement in their code by its text. Control characters (an escape
// sequence in hostile text) are shown as \xNN, so a key is safe to print on
// a terminal; HTML escaping is the page's job.
package sqlnorm

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLen is the default length of a key, in characters: long enough for an
// INSERT's column list or a join's first table, short enough for a table
// row. pg_stat_statements keeps the whole text; a terminal cannot.
const MaxLen = 200

// Normalize returns sql's key, at most max characters (max <= 0: no limit),
// ending in "…" when it was cut.
func Normalize(sql string, max int) string {
	var b strings.Builder
	s := scanner{src: sql}
	space := false         // a space is owed before the next token
	var prev, prev2 string // the last two tokens written ("" at the start)
	for {
		kind, tok := s.next()
		if kind == tokEnd {
			break
		}
		switch kind {
		case tokSpace, tokComment:
			space = b.Len() > 0
			continue
		case tokLiteral, tokParam:
			tok = "?"
			// A sign is the constant's, as pg_stat_statements takes it:
			// "+ -1234" and "+ 1234" are one statement. A minus after a
			// word, a value or a ")" is a subtraction and stays.
			if prev == "-" && !space && isOperand(prev2) {
				break
			}
			if prev == "-" && !space {
				str := b.String()
				b.Reset()
				b.WriteString(strings.TrimSuffix(str, "-"))
				prev = prev2
			}
		}
		if space && needsSpace(b.String(), tok) {
			b.WriteByte(' ')
		}
		space = false
		b.WriteString(tok)
		prev2, prev = prev, tok
	}
	return Cut(escape(b.String()), max)
}

// isOperand tells whether a token ends an operand (a word, a value, a
// closing parenthesis): a minus after it subtracts.
func isOperand(tok string) bool {
	if tok == "" {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(tok)
	return r == ')' || r == '?' || r == '"' || r == ']' || r == '`' || isIdent(r) || unicode.IsDigit(r)
}

// needsSpace tells whether the space between two tokens is kept: around
// punctuation it goes ("f(?, ?)", not "f( ? , ? )"), as
// sqlite3_normalized_sql writes it.
func needsSpace(before, tok string) bool {
	last, _ := utf8.DecodeLastRuneInString(before)
	first, _ := utf8.DecodeRuneInString(tok)
	switch {
	case last == '(' || last == '.':
		return false
	case first == ')' || first == ',' || first == ';' || first == '.':
		return false
	}
	return true
}

func escape(s string) string {
	if strings.IndexFunc(s, isControl) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				fmt.Fprintf(&b, `\x%02x`, s[i])
				continue
			}
			b.WriteRune(r)
		case isControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// Cut cuts s to max characters (max <= 0: no limit), ending in "…" when
// it was cut.
func Cut(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
