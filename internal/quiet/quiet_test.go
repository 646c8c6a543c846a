package quiet

import (
	"fmt"
	"strings"
	"testing"
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
