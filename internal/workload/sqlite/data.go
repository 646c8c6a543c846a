package sqlite

import "math/bits"

// Row contents are contacts of realistic size, like AndroBench's: the sizes
// matter (they set how many rows fit in a page), the letters do not.
// benchmarks/sqlite/cloop.c generates the very same bytes from the same seed;
// change both together.
const (
	nameLen    = 16 // "Abcdefg Hijklmno"
	phoneLen   = 12 // "+" and 11 digits
	emailLen   = 24 // 11 letters "@" 8 letters ".com"
	addressLen = 48 // 4 digits " " 43 letters and spaces

	// Unix times written to the updated column by insert and update.
	insertedAt = 1700000000
	updatedAt  = 1800000000
)

const (
	letters      = "abcdefghijklmnopqrstuvwxyz"
	digits       = "0123456789"
	addressChars = "abcdefghijklmnopqrstuvwxyz "
)

// chunkRows is how many statements' arguments are generated at a time,
// outside the timing: enough that the pauses are rare (a few per second at
// most), small enough (about 4 MiB) that --rows is bounded by the disk, not
// by memory.
const chunkRows = 1 << 14

// rng is splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
// number generators", OOPSLA 2014): ten lines in C, so the C reference loop
// draws exactly what this package draws.
type rng struct{ x uint64 }

func (r *rng) next() uint64 {
	r.x += 0x9e3779b97f4a7c15
	z := r.x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) fill(b []byte, alphabet string) {
	for i := range b {
		b[i] = alphabet[r.next()%uint64(len(alphabet))]
	}
}

// name, phone, email and address fill b, which must be exactly as long as
// the value (nameLen and so on).
func (r *rng) name(b []byte) {
	r.fill(b, letters)
	b[0] -= 'a' - 'A'
	b[7] = ' '
	b[8] -= 'a' - 'A'
}

func (r *rng) phone(b []byte) {
	b[0] = '+'
	r.fill(b[1:], digits)
}

func (r *rng) email(b []byte) {
	r.fill(b[:11], letters)
	b[11] = '@'
	r.fill(b[12:20], letters)
	copy(b[20:], ".com")
}

func (r *rng) address(b []byte) {
	r.fill(b[:4], digits)
	b[4] = ' '
	r.fill(b[5:], addressChars)
}

// perm is a pseudo-random bijection of [0, n): the shuffled key order of
// update, select and delete, computed per key in constant memory (a stored
// Fisher-Yates permutation would take 8 bytes a row). Three rounds of
// xor-key, multiply by an odd constant and xor-shift, each a bijection of
// the smallest power-of-two range holding n, then cycle-walking back into
// [0, n) (Black and Rogaway, "Ciphers with arbitrary finite domains", 2002):
// fewer than two rounds of walking on average.
type perm struct {
	n, mask uint64
	shift   uint
	keys    [3]uint64
}

func newPerm(n int, r *rng) perm {
	p := perm{n: uint64(n)}
	b := uint(bits.Len64(p.n - 1)) // n <= 2^b
	p.mask = 1<<b - 1
	p.shift = max(1, (b+1)/2)
	for i := range p.keys {
		p.keys[i] = r.next()
	}
	return p
}

func (p *perm) round(x uint64) uint64 {
	for _, k := range p.keys {
		x = (x ^ k) & p.mask
		x = (x * 0xbf58476d1ce4e5b9) & p.mask
		x ^= x >> p.shift
	}
	return x
}

// id returns the key of statement k: 1 + the permuted k.
func (p *perm) id(k int) int64 {
	x := p.round(uint64(k))
	for x >= p.n {
		x = p.round(x)
	}
	return int64(x) + 1
}

// gen produces one phase's statements, chunkRows at a time, with the
// parameters laid out as capi.Stmt.Exec takes them, so that the timed loop
// only slices (no copying, no string building, no allocation). Values are
// drawn from r in statement order; a phase's key permutation is drawn when
// its gen is made. cloop.c draws in the same order.
type gen struct {
	phase string
	rows  int
	r     *rng
	perm  perm
	// from is the statement index of the chunk's first statement; the chunk
	// holds the statements from..from+n-1.
	from, n int
	// Statement i of the chunk has the width values vals[i*width:] (an Int
	// parameter's value, a Text parameter's length) and the textWidth bytes
	// text[i*textWidth:] (its Text parameters back to back).
	width, textWidth int
	vals             []int64
	text             []byte
}

func newGen(phase string, rows int, r *rng) *gen {
	g := &gen{phase: phase, rows: rows, r: r, width: len(phaseKinds[phase])}
	if phase != PhaseInsert {
		g.perm = newPerm(rows, r)
	}
	switch phase {
	case PhaseInsert:
		g.textWidth = nameLen + phoneLen + emailLen + addressLen
	case PhaseUpdate:
		g.textWidth = phoneLen + emailLen
	}
	n := min(rows, chunkRows)
	g.vals = make([]int64, n*g.width)
	g.text = make([]byte, n*g.textWidth)
	return g
}

// id is the key of statement k.
func (g *gen) id(k int) int64 {
	if g.phase == PhaseInsert {
		return int64(k + 1)
	}
	return g.perm.id(k)
}

// args returns the parameters of statement i of the chunk (statement
// g.from+i of the phase).
func (g *gen) args(i int) ([]int64, []byte) {
	return g.vals[i*g.width : (i+1)*g.width], g.text[i*g.textWidth : (i+1)*g.textWidth]
}

// next generates the chunk that starts at statement from (the previous
// chunk's end, or 0).
func (g *gen) next(from int) {
	g.from, g.n = from, min(g.rows-from, len(g.vals)/g.width)
	for i := range g.n {
		id := g.id(from + i)
		v, t := g.args(i)
		switch g.phase {
		case PhaseInsert:
			// INSERT ... VALUES(id, name, phone, email, address, updated)
			g.r.name(t[:nameLen])
			t = t[nameLen:]
			g.r.phone(t[:phoneLen])
			t = t[phoneLen:]
			g.r.email(t[:emailLen])
			g.r.address(t[emailLen:])
			v[0], v[1], v[2], v[3], v[4], v[5] = id, nameLen, phoneLen, emailLen, addressLen, insertedAt+id
		case PhaseUpdate:
			// UPDATE ... SET phone=?, email=?, updated=? WHERE id=?
			g.r.phone(t[:phoneLen])
			g.r.email(t[phoneLen:])
			v[0], v[1], v[2], v[3] = phoneLen, emailLen, updatedAt+id, id
		default:
			// SELECT ... WHERE id=? and DELETE ... WHERE id=?
			v[0] = id
		}
	}
}
