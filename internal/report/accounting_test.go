package report

import (
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The time by activity and state fits the terminal with all nine states,
// the storage ones under one label, each cell a share of the busy time.
func TestActivityMatrixFits(t *testing.T) {
	ta := &model.TimeAccounting{Source: "ebpf", WindowSec: 100,
		Total:        map[string]float64{"cpu": 3000},
		CriticalPath: map[string]float64{"cpu": 1000},
		Threads:      []model.ThreadTime{{PID: 1, TID: 1, Comm: "t", WallSec: 100, Seconds: map[string]float64{"cpu": 100}}}}
	for i, st := range model.States {
		ta.Matrix = append(ta.Matrix, model.ActivityTime{Activity: "unsampled", State: st, Seconds: 3600 + float64(i), CriticalSec: 10})
	}
	ta.Matrix = append(ta.Matrix, model.ActivityTime{Activity: "sync", State: model.StateCPU, Seconds: 0.001})
	run := &model.Run{Target: model.Target{Kind: "command", Command: &model.CommandConfig{Argv: []string{"x"}}}, TimeAccounting: ta}
	out := string(Terminal(run, Options{}))
	for i, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > Width {
			t.Errorf("line %d is %d columns: %q", i+1, n, l)
		}
	}
	for _, want := range []string{
		"--- storage ---",
		"  doing        time  path  cpu cpu-wait read write sync lock peer timer other",
		"  unsampled 540m36s  100%  11%      11%  11%   11%  11%  11%  11%   11%   11%",
		"  sync          1ms    0%  <1%",
		"unsampled: cpu",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text view lacks %q:\n%s", want, out)
		}
	}
}
