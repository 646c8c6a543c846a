package sqlite

import (
	"math"
	"slices"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite/capi"
)

// all returns every statement of the phases, each as its parameters in
// order (int64 or string), for tests that need to know what a run wrote.
func all(phases []string, rows int, seed int64) [][][]any {
	r := &rng{x: uint64(seed)}
	out := make([][][]any, len(phases))
	for i, ph := range phases {
		g := newGen(ph, rows, r)
		for from := 0; from < rows; from += g.n {
			g.next(from)
			for k := range g.n {
				vals, text := g.args(k)
				a := make([]any, len(vals))
				for c, kind := range phaseKinds[ph] {
					if kind == capi.Int {
						a[c] = vals[c]
						continue
					}
					a[c], text = string(text[:vals[c]]), text[vals[c]:]
				}
				if len(text) != 0 {
					panic("text left over")
				}
				out[i] = append(out[i], a)
			}
		}
	}
	return out
}

func TestSameSeedSameData(t *testing.T) {
	phases := []string{"insert", "update", "delete"}
	a, b, c := all(phases, 50, 7), all(phases, 50, 7), all(phases, 50, 8)
	for i := range a {
		for k := range a[i] {
			if !slices.Equal(a[i][k], b[i][k]) {
				t.Fatalf("%s statement %d: same seed, different values", phases[i], k)
			}
		}
	}
	if slices.EqualFunc(a[1], c[1], func(x, y []any) bool { return x[3] == y[3] }) {
		t.Error("different seeds gave the same update order")
	}
}

// The shuffled orders are permutations of 1..n for every n, including the
// edges of the power-of-two ranges the permutation works in, and they spread
// the keys (a B-tree sees random access, not a scan).
func TestPermutation(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 100, 1023, 1024, 1025, 50000} {
		r := &rng{x: uint64(n)}
		p := newPerm(n, r)
		seen := make([]bool, n+1)
		var jumps float64
		prev := int64(0)
		for k := range n {
			id := p.id(k)
			if id < 1 || id > int64(n) || seen[id] {
				t.Fatalf("n %d: statement %d got id %d (seen before: %v)", n, k, id, id >= 1 && id <= int64(n) && seen[id])
			}
			seen[id] = true
			if k > 0 {
				jumps += math.Abs(float64(id - prev))
			}
			prev = id
		}
		// A uniformly random order jumps n/3 on average.
		if mean := jumps / float64(n-1); n >= 100 && (mean < float64(n)/4 || mean > float64(n)/2.5) {
			t.Errorf("n %d: mean jump between consecutive keys %.0f, want about n/3 = %.0f", n, mean, float64(n)/3)
		}
	}
}

// A phase longer than one chunk gets every statement once, across chunks.
func TestChunks(t *testing.T) {
	rows := 2*chunkRows + 5
	got := all([]string{"insert", "delete"}, rows, 3)
	for i, name := range []string{"insert", "delete"} {
		if len(got[i]) != rows {
			t.Fatalf("%s: %d statements, want %d", name, len(got[i]), rows)
		}
		seen := make(map[int64]bool, rows)
		for _, a := range got[i] {
			seen[a[0].(int64)] = true
		}
		if len(seen) != rows {
			t.Errorf("%s: %d distinct ids, want %d", name, len(seen), rows)
		}
	}
}

// TestDataGolden pins the first generated rows and a shuffled order:
// benchmarks/sqlite/cloop.c generates the same bytes, so a change here must
// be made there too (its test compares the two databases).
func TestDataGolden(t *testing.T) {
	p := all([]string{"insert", "update"}, 5, 1)
	got := p[0][0]
	want := []any{int64(1), "Ttodfcr Ysheyyil", "+51426456399", "fhqogjwvgxh@qcehfwhw.com", "8898 p baizsihojlcryzgcnlfjtyreowwrdmjc  wkmplsv", int64(1700000001)}
	if !slices.Equal(got, want) {
		t.Errorf("first insert row\n got %q\nwant %q", got, want)
	}
	var order []int64
	for _, a := range p[1] {
		order = append(order, a[3].(int64))
	}
	if !slices.Equal(order, []int64{5, 1, 4, 3, 2}) {
		t.Errorf("update order %v", order)
	}
}
