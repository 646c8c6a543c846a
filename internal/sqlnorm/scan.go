package sqlnorm

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind int

const (
	tokEnd tokKind = iota
	tokSpace
	tokComment
	tokLiteral // a string, blob or number
	tokParam   // ?, ?NNN, :name, @name, $name, $1
	tokWord    // a keyword or identifier, quoted or not
	tokOther   // one character of punctuation or an operator
)

// scanner cuts SQL into tokens the way SQLite's tokenizer (tokenize.c) and
// PostgreSQL's scanner agree on. Anything unterminated runs to the end.
type scanner struct {
	src string
	pos int
}

func (s *scanner) peek(off int) byte {
	if s.pos+off < len(s.src) {
		return s.src[s.pos+off]
	}
	return 0
}

func (s *scanner) next() (tokKind, string) {
	if s.pos >= len(s.src) {
		return tokEnd, ""
	}
	start := s.pos
	r, n := utf8.DecodeRuneInString(s.src[s.pos:])
	c := s.src[s.pos]
	switch {
	case unicode.IsSpace(r):
		for s.pos < len(s.src) {
			r, n := utf8.DecodeRuneInString(s.src[s.pos:])
			if !unicode.IsSpace(r) {
				break
			}
			s.pos += n
		}
		return tokSpace, s.src[start:s.pos]
	case c == '-' && s.peek(1) == '-':
		if i := strings.IndexByte(s.src[s.pos:], '\n'); i >= 0 {
			s.pos += i + 1
		} else {
			s.pos = len(s.src)
		}
		return tokComment, s.src[start:s.pos]
	case c == '/' && s.peek(1) == '*':
		if i := strings.Index(s.src[s.pos+2:], "*/"); i >= 0 {
			s.pos += 2 + i + 2
		} else {
			s.pos = len(s.src)
		}
		return tokComment, s.src[start:s.pos]
	case c == '\'':
		s.quoted('\'')
		return tokLiteral, s.src[start:s.pos]
	case c == '"' || c == '`':
		s.quoted(c)
		return tokWord, s.src[start:s.pos]
	case c == '[':
		if i := strings.IndexByte(s.src[s.pos:], ']'); i >= 0 {
			s.pos += i + 1
		} else {
			s.pos = len(s.src)
		}
		return tokWord, s.src[start:s.pos]
	case isDigit(c) || c == '.' && isDigit(s.peek(1)):
		s.number()
		return tokLiteral, s.src[start:s.pos]
	case c == '?':
		s.pos++
		for s.pos < len(s.src) && isDigit(s.src[s.pos]) {
			s.pos++
		}
		return tokParam, s.src[start:s.pos]
	case c == ':' && s.peek(1) == ':': // a PostgreSQL cast, not a parameter
		s.pos += 2
		return tokOther, s.src[start:s.pos]
	case c == '$' && s.dollarQuote():
		return tokLiteral, s.src[start:s.pos]
	case (c == ':' || c == '@' || c == '$') && s.pos+1 < len(s.src) && isIdentByte(s.src[s.pos+1]):
		s.pos++
		s.word()
		return tokParam, s.src[start:s.pos]
	case isIdent(r):
		s.word()
		w := s.src[start:s.pos]
		// A prefixed string: X'01ff' (a blob), E'..', B'..', N'..'.
		if len(w) == 1 && strings.ContainsAny(w, "xXeEbBnN") && s.peek(0) == '\'' {
			s.quoted('\'')
			return tokLiteral, s.src[start:s.pos]
		}
		return tokWord, w
	}
	s.pos += n
	return tokOther, s.src[start:s.pos]
}

// quoted moves past a token quoted by q, where a doubled q stands for itself.
func (s *scanner) quoted(q byte) {
	s.pos++
	for s.pos < len(s.src) {
		if s.src[s.pos] == q {
			if s.peek(1) == q {
				s.pos += 2
				continue
			}
			s.pos++
			return
		}
		s.pos++
	}
}

func (s *scanner) number() {
	if s.src[s.pos] == '0' && (s.peek(1) == 'x' || s.peek(1) == 'X') {
		s.pos += 2
		for s.pos < len(s.src) && (isHex(s.src[s.pos]) || s.src[s.pos] == '_') {
			s.pos++
		}
		return
	}
	digits := func() {
		for s.pos < len(s.src) && (isDigit(s.src[s.pos]) || s.src[s.pos] == '_') {
			s.pos++
		}
	}
	digits()
	if s.peek(0) == '.' {
		s.pos++
		digits()
	}
	if c := s.peek(0); c == 'e' || c == 'E' {
		sign := 0
		if d := s.peek(1); d == '+' || d == '-' {
			sign = 1
		}
		if isDigit(s.peek(1 + sign)) {
			s.pos += 1 + sign
			digits()
		}
	}
}

// dollarQuote moves past a PostgreSQL dollar-quoted string ($$..$$,
// $tag$..$tag$) and tells whether there was one.
func (s *scanner) dollarQuote() bool {
	end := s.pos + 1
	for end < len(s.src) && isIdentByte(s.src[end]) && !isDigit(s.src[s.pos+1]) {
		end++
	}
	if end >= len(s.src) || s.src[end] != '$' {
		return false
	}
	tag := s.src[s.pos : end+1]
	if i := strings.Index(s.src[end+1:], tag); i >= 0 {
		s.pos = end + 1 + i + len(tag)
	} else {
		s.pos = len(s.src)
	}
	return true
}

func (s *scanner) word() {
	for s.pos < len(s.src) {
		r, n := utf8.DecodeRuneInString(s.src[s.pos:])
		if !isIdent(r) && !unicode.IsDigit(r) && r != '$' {
			return
		}
		s.pos += n
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c >= 0x80
}

// isIdent: SQLite takes every character above 0x7f as part of an
// identifier (tokenize.c, IdChar).
func isIdent(r rune) bool { return r == '_' || unicode.IsLetter(r) || r >= 0x80 && !unicode.IsSpace(r) }
