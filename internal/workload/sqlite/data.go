package sqlite

import (
	"database/sql/driver"
	"math/bits"
)

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

func (r *rng) name() string {
	var b [nameLen]byte
	r.fill(b[:], letters)
	b[0] -= 'a' - 'A'
	b[7] = ' '
	b[8] -= 'a' - 'A'
	return string(b[:])
}

func (r *rng) phone() string {
	var b [phoneLen]byte
	b[0] = '+'
	r.fill(b[1:], digits)
	return string(b[:])
}

func (r *rng) email() string {
	var b [emailLen]byte
	r.fill(b[:11], letters)
	b[11] = '@'
	r.fill(b[12:20], letters)
	copy(b[20:], ".com")
	return string(b[:])
}

func (r *rng) address() string {
	var b [addressLen]byte
	r.fill(b[:4], digits)
	b[4] = ' '
	r.fill(b[5:], addressChars)
	return string(b[:])
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

// gen produces one phase's statements, chunkRows at a time, with argument
// values already boxed in the order the statement binds them, so the timed
// loop only copies interface values (no string building, no allocation for
// arguments). Values are drawn from r in statement order; a phase's key
// permutation is drawn when its gen is made. cloop.c draws in the same order.
type gen struct {
	phase string
	rows  int
	r     *rng
	perm  perm
	// from is the statement index of ids[0] and args[0]; the chunk holds
	// the statements from..from+len(ids)-1.
	from int
	ids  []int64
	args [][]driver.Value
}

func newGen(phase string, rows int, r *rng) *gen {
	g := &gen{phase: phase, rows: rows, r: r}
	if phase != PhaseInsert {
		g.perm = newPerm(rows, r)
	}
	n := min(rows, chunkRows)
	g.ids = make([]int64, 0, n)
	g.args = make([][]driver.Value, n)
	width := 1 // SELECT and DELETE: the id
	switch phase {
	case PhaseInsert:
		width = 6
	case PhaseUpdate:
		width = 4
	}
	for k := range g.args {
		g.args[k] = make([]driver.Value, width)
	}
	return g
}

// id is the key of statement k.
func (g *gen) id(k int) int64 {
	if g.phase == PhaseInsert {
		return int64(k + 1)
	}
	return g.perm.id(k)
}

// next generates the chunk that starts at statement from (the previous
// chunk's end, or 0).
func (g *gen) next(from int) {
	n := min(g.rows-from, cap(g.ids))
	g.from, g.ids = from, g.ids[:n]
	for i := range n {
		id := g.id(from + i)
		g.ids[i] = id
		a := g.args[i]
		switch g.phase {
		case PhaseInsert:
			// INSERT ... VALUES(id, name, phone, email, address, updated)
			a[0], a[1], a[2], a[3], a[4], a[5] = id, g.r.name(), g.r.phone(), g.r.email(), g.r.address(), int64(insertedAt)+id
		case PhaseUpdate:
			// UPDATE ... SET phone=?, email=?, updated=? WHERE id=?
			a[0], a[1], a[2], a[3] = g.r.phone(), g.r.email(), int64(updatedAt)+id, id
		default:
			// SELECT ... WHERE id=? and DELETE ... WHERE id=?
			a[0] = id
		}
	}
}

// all returns every statement of the phases as one slice per phase, for
// tests that need to know what a run wrote.
func all(phases []string, rows int, seed int64) [][][]driver.Value {
	r := &rng{x: uint64(seed)}
	out := make([][][]driver.Value, len(phases))
	for i, ph := range phases {
		g := newGen(ph, rows, r)
		for from := 0; from < rows; from += len(g.ids) {
			g.next(from)
			for _, a := range g.args[:len(g.ids)] {
				out[i] = append(out[i], append([]driver.Value(nil), a...))
			}
		}
	}
	return out
}
