package quiet

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// skipRecorder is a testing.TB whose Skipf records instead of stopping.
type skipRecorder struct {
	testing.TB
	skipped string
}

func (r *skipRecorder) Helper() {}

func (r *skipRecorder) Skipf(format string, args ...any) { r.skipped = fmt.Sprintf(format, args...) }

func TestSteady(t *testing.T) {
	quiet := &skipRecorder{TB: t}
	Steady(quiet, "the baseline", 0.20, 0.35)
	if quiet.skipped != "" {
		t.Errorf("±20%% under a ±35%% bound skipped: %s", quiet.skipped)
	}
	noisy := &skipRecorder{TB: t}
	Steady(noisy, "the baseline", 0.52, 0.35)
	if !strings.Contains(noisy.skipped, "the baseline moved ±52%") || !strings.Contains(noisy.skipped, "under ±35%") {
		t.Errorf("±52%% over a ±35%% bound: %q", noisy.skipped)
	}
}

// TestWatch: a busy process beside the test is load; once it has exited
// and been waited for, its CPU time is this process's children's, not
// load.
func TestWatch(t *testing.T) {
	burner := exec.Command("sh", "-c", "while :; do :; done")
	if err := burner.Start(); err != nil {
		t.Fatal(err)
	}
	w := Start()
	time.Sleep(time.Second)
	during, _, err := w.others()
	if err != nil {
		t.Skipf("cannot measure here: %v", err)
	}
	loaded, why := w.Loaded()
	burner.Process.Kill()
	burner.Wait()
	after, _, err := w.others()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a burner running: %.2f CPUs of others (%s); waited for: %.2f", during, why, after)
	// One busy thread has a CPU of the two, or shares one: at least half.
	if !loaded || during < outsideCPUs {
		t.Errorf("a burner running beside it: %.2f CPUs of other processes, loaded %v; want %.1f or more", during, loaded, outsideCPUs)
	}
	// Its CPU time moved to this process's children: out of the others'.
	if during-after < 0.4 {
		t.Errorf("the burner waited for: %.2f CPUs of others, %.2f before: want its CPU time taken out", after, during)
	}
}
