package rows

import (
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/compare"
)

// TestFactorNoNegativeZero: a share that fell by under half a point read
// "-0 points" in the comparison's time table.
func TestFactorNoNegativeZero(t *testing.T) {
	for _, c := range []struct {
		a, b float64
		want string
	}{{0.031, 0.028, "+0 points"}, {0.028, 0.031, "+0 points"}, {0.48, 0.32, "-16 points"}, {0.17, 0.49, "+32 points"}} {
		if got := Factor(compare.Difference{Unit: compare.UnitShare, A: c.a, B: c.b}); got != c.want {
			t.Errorf("Factor(%v -> %v) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}
