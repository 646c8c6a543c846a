package sqlitefile

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf16"
)

// rowFunc receives a table leaf cell's rowid and record; complete is false
// when the record was cut short (maxSchemaRow, a broken overflow chain).
type rowFunc func(rowid int64, rec []byte, complete bool)

// tree claims the pages of the b-tree rooted at root for owner, and their
// overflow chains. want is the kind of b-tree the owner must have, "table"
// or "index", or "" when either will do (a table's is an index b-tree when
// it is WITHOUT ROWID); every page below the root must be of its kind. If
// row is not nil it receives the records of table leaf cells.
func (p *parser) tree(root uint32, owner, want string, row rowFunc) {
	what := fmt.Sprintf("b-tree of %q", owner)
	stack := []uint32{root}
	var kind PageType // the root's type, for the kind of the pages below
	for len(stack) > 0 {
		no := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !p.claim(no, Unknown, "", what) || !p.read(no, p.page, what) {
			continue
		}
		hdr := 0
		if no == 1 {
			hdr = headerSize
		}
		t := TypeOfFlag(p.page[hdr])
		if t == Unknown {
			p.note("%s: page %d has flag %#02x, not a b-tree page", what, no, p.page[hdr])
			continue
		}
		p.db.Pages[no-1].Type, p.db.Pages[no-1].Owner = t, owner
		if kind == "" {
			kind = t
			if want != "" && isTable(t) != (want == "table") {
				p.note("%s: root page %d is %s, want %s-interior or %s-leaf", what, no, t, want, want)
			}
		}
		if isTable(t) != isTable(kind) {
			p.note("%s: page %d (%s) is in a tree whose root is %s: not followed", what, no, t, kind)
			continue
		}
		stack = p.cells(no, hdr, t, owner, what, stack, row)
	}
}

func isTable(t PageType) bool { return t == TableInterior || t == TableLeaf }

// cells reads the cells of b-tree page no (in p.page, its header at hdr),
// claims their overflow chains and returns stack with the child pages
// pushed.
func (p *parser) cells(no uint32, hdr int, t PageType, owner, what string, stack []uint32, row rowFunc) []uint32 {
	pg := p.page[:p.usable]
	interior := t == TableInterior || t == IndexInterior
	ptrs := hdr + 8
	if interior {
		ptrs = hdr + 12
	}
	n := int(be16(pg[hdr+3:]))
	if ptrs+2*n > len(pg) {
		p.note("%s: page %d claims %d cells, more than fit", what, no, n)
		n = max(0, (len(pg)-ptrs)/2)
	}
	// The children are pushed in key order, then reversed so that they
	// are popped in key order: that puts Objects in sqlite_schema's order.
	mark := len(stack)
	end := ptrs + 2*n // cells lie after the cell pointer array
	for i := range n {
		off := int(be16(pg[ptrs+2*i:]))
		if off < end || off >= len(pg) {
			p.note("%s: page %d cell %d is at offset %d, outside the cell area", what, no, i, off)
			continue
		}
		c := pg[off:]
		if interior {
			if len(c) < 4 {
				p.note("%s: page %d cell %d is cut short", what, no, i)
				continue
			}
			stack = append(stack, be32(c))
			if t == TableInterior {
				continue // a child and a rowid: no payload
			}
			c = c[4:]
		}
		size, k := varint(c)
		if k == 0 {
			p.note("%s: page %d cell %d is cut short", what, no, i)
			continue
		}
		c = c[k:]
		var rowid int64
		if t == TableLeaf {
			id, k := varint(c)
			if k == 0 {
				p.note("%s: page %d cell %d is cut short", what, no, i)
				continue
			}
			rowid, c = int64(id), c[k:]
		}
		rec, complete, ok := p.payload(c, size, t == TableLeaf, owner, cellRef{tree: what, page: no, cell: i}, row != nil)
		if ok && row != nil && t == TableLeaf {
			row(rowid, rec, complete)
		}
	}
	if interior {
		stack = append(stack, be32(pg[hdr+8:]))
	}
	slices.Reverse(stack[mark:])
	return stack
}

// localSize is how many bytes of a payload of size bytes a cell keeps on
// its page (fileformat2.html, "B-tree Pages"): all of it up to x, else m
// plus what makes the rest fill whole overflow pages, if that fits in x.
func localSize(size uint64, usable int, tableLeaf bool) int {
	x := (usable-12)*64/255 - 23
	if tableLeaf {
		x = usable - 35
	}
	if size <= uint64(x) {
		return int(size)
	}
	m := (usable-12)*32/255 - 23
	k := m + int((size-uint64(m))%uint64(usable-4))
	if k <= x {
		return k
	}
	return m
}

// cellRef names a cell in notes; the string is made only for a note.
type cellRef struct {
	tree     string
	page     uint32
	cell     int
	overflow bool // the ref is to the cell's overflow chain
}

func (r cellRef) String() string {
	s := fmt.Sprintf("%s: page %d cell %d", r.tree, r.page, r.cell)
	if r.overflow {
		s += " overflow"
	}
	return s
}

// payload claims the overflow chain of a cell whose payload of size bytes
// starts at c. With keep, it returns the payload, at most maxSchemaRow
// bytes of it, and whether that is all of it; ok is false if the cell does
// not fit its page.
func (p *parser) payload(c []byte, size uint64, tableLeaf bool, owner string, what cellRef, keep bool) (rec []byte, complete, ok bool) {
	local := localSize(size, p.usable, tableLeaf)
	if uint64(local) == size {
		if local > len(c) {
			p.note("%s: payload of %d bytes runs past the page", what, size)
			return nil, false, false
		}
		return c[:local], true, true
	}
	if local+4 > len(c) {
		p.note("%s: payload of %d bytes runs past the page", what, size)
		return nil, false, false
	}
	if keep {
		rec = append(rec, c[:local]...)
	}
	rest, per := size-uint64(local), uint64(p.usable-4)
	chain := rest / per // overflow pages the rest needs
	if rest%per != 0 {
		chain++
	}
	chainRef := what
	chainRef.overflow = true
	no := be32(c[local:])
	for i := uint64(0); ; i++ {
		if no == 0 {
			if i < chain {
				p.note("%s: overflow chain ends after %d of %d pages", what, i, chain)
			}
			break
		}
		if i == chain {
			p.note("%s: overflow chain goes on past the %d pages the payload needs", what, chain)
			break
		}
		if !p.claim(no, Overflow, owner, chainRef) {
			break
		}
		want := 4
		if keep && len(rec) < maxSchemaRow {
			want = p.usable
		}
		if !p.read(no, p.ovfl[:want], chainRef) {
			break
		}
		if want > 4 {
			n := min(per, rest)
			rest -= n
			rec = append(rec, p.ovfl[4:4+n]...)
		}
		no = be32(p.ovfl)
	}
	return rec, uint64(len(rec)) == size, true
}

// object decodes a sqlite_schema record: type, name, tbl_name, rootpage.
func (p *parser) object(rec []byte) (Object, error) {
	cols, err := columns(rec, 4)
	if err != nil {
		return Object{}, err
	}
	var o Object
	for i, s := range []*string{&o.Type, &o.Name, &o.TableName} {
		if *s, err = p.text(cols[i]); err != nil {
			return Object{}, fmt.Errorf("column %d: %w", i+1, err)
		}
	}
	root, err := cols[3].int()
	if err != nil {
		return Object{}, fmt.Errorf("rootpage: %w", err)
	}
	if root < 0 || root > math.MaxUint32 {
		return Object{}, fmt.Errorf("rootpage %d out of range", root)
	}
	o.RootPage = uint32(root)
	return o, nil
}

// column is one value of a record: its serial type and its bytes.
type column struct {
	typ uint64
	b   []byte
}

// columns decodes the first n columns of a record (fileformat2.html,
// "Record Format"); a record with fewer columns is an error.
func columns(rec []byte, n int) ([]column, error) {
	hsize, k := varint(rec)
	if k == 0 || hsize > uint64(len(rec)) || hsize < uint64(k) {
		return nil, errors.New("record header runs past the record")
	}
	hdr, body := rec[k:hsize], rec[hsize:]
	cols := make([]column, 0, n)
	for len(cols) < n {
		typ, k := varint(hdr)
		if k == 0 {
			return nil, fmt.Errorf("record has %d columns, want %d", len(cols), n)
		}
		hdr = hdr[k:]
		var size uint64
		switch {
		case typ >= 12:
			size = (typ - 12) / 2
		case typ >= 1 && typ <= 7:
			size = uint64([]int{0, 1, 2, 3, 4, 6, 8, 8}[typ])
		case typ == 10 || typ == 11:
			return nil, fmt.Errorf("column %d has reserved serial type %d", len(cols)+1, typ)
		}
		if size > uint64(len(body)) {
			return nil, fmt.Errorf("column %d runs past the record", len(cols)+1)
		}
		cols = append(cols, column{typ, body[:size]})
		body = body[size:]
	}
	return cols, nil
}

func (c column) int() (int64, error) {
	switch {
	case c.typ == 8:
		return 0, nil
	case c.typ == 9:
		return 1, nil
	case c.typ >= 1 && c.typ <= 6:
		v := int64(int8(c.b[0])) // sign-extend from the first byte
		for _, b := range c.b[1:] {
			v = v<<8 | int64(b)
		}
		return v, nil
	}
	return 0, fmt.Errorf("serial type %d is not an integer", c.typ)
}

// text decodes a text column in the database's encoding; NULL is "".
func (p *parser) text(c column) (string, error) {
	if c.typ == 0 {
		return "", nil
	}
	if c.typ < 13 || c.typ%2 == 0 {
		return "", fmt.Errorf("serial type %d is not text", c.typ)
	}
	if p.enc != 2 && p.enc != 3 {
		return string(c.b), nil
	}
	u := make([]uint16, len(c.b)/2)
	for i := range u {
		lo, hi := c.b[2*i], c.b[2*i+1]
		if p.enc == 3 {
			lo, hi = hi, lo
		}
		u[i] = uint16(hi)<<8 | uint16(lo)
	}
	return string(utf16.Decode(u)), nil
}

// varint decodes an SQLite varint: big-endian, seven bits a byte while the
// high bit is set, all eight bits of a ninth byte. n is 0 if b ends first.
func varint(b []byte) (v uint64, n int) {
	for i, c := range b {
		if i == 8 {
			return v<<8 | uint64(c), 9
		}
		v = v<<7 | uint64(c&0x7f)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}
