package runner

import (
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/probe/timeacct"
)

func TestPeakAlive(t *testing.T) {
	th := func(from, to uint64) timeacct.Thread { return timeacct.Thread{FromNs: from, ToNs: to} }
	cases := []struct {
		name    string
		threads []timeacct.Thread
		want    int
	}{
		{"none", nil, 0},
		{"one", []timeacct.Thread{th(0, 10)}, 1},
		{"a thread per message, one at a time", []timeacct.Thread{th(0, 100), th(10, 20), th(20, 30), th(30, 40)}, 2},
		{"a pool", []timeacct.Thread{th(0, 100), th(0, 100), th(0, 100), th(50, 60)}, 4},
	}
	for _, c := range cases {
		if got := peakAlive(c.threads); got != c.want {
			t.Errorf("%s: peak %d, want %d", c.name, got, c.want)
		}
	}
}
