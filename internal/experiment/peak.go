package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// peakSeconds is how long the device's peak write rate is measured: long
// enough to pass a virtual disk's burst allowance at its first second, short
// enough to do once per device without asking.
const peakSeconds = 3

// peakFile remembers each device's measured peak write rate, in
// perfsleuth's directory of the user's cache directory (peakStateDir).
const peakFile = "device-peaks.json"

// peakRecord is one device's remembered peak.
type peakRecord struct {
	BytesPerSec float64   `json:"bytes_per_sec"`
	MeasuredAt  time.Time `json:"measured_at"`
	Dir         string    `json:"dir"`
}

// deviceKey names a device so that a remembered peak is not used for
// another one: its disks and their sizes (a replaced disk of another size
// gets measured again).
func deviceKey(st *model.Storage) string {
	if st == nil || len(st.Disks) == 0 {
		return ""
	}
	var parts []string
	for _, d := range st.Disks {
		size, _ := os.ReadFile(filepath.Join("/sys/block", d, "size"))
		parts = append(parts, d+":"+strings.TrimSpace(string(size)))
	}
	return strings.Join(parts, "+")
}

// peakStateDir is where device peaks are remembered: perfsleuth's
// directory in the user's cache directory ($XDG_CACHE_HOME or ~/.cache),
// "" when there is none (the peak is then measured each time).
func peakStateDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "perfsleuth")
}

// devicePeak returns the peak write rate of the device under dir: the
// remembered one, or one measured now (and remembered in stateDir, unless
// it is "").
func devicePeak(ctx context.Context, exe, dir, stateDir string, st *model.Storage) (rate float64, note string, err error) {
	key, path := deviceKey(st), ""
	if stateDir == "" {
		key = "" // nowhere to remember it: neither read nor written
	} else {
		path = filepath.Join(stateDir, peakFile)
	}
	known := map[string]peakRecord{}
	if path != "" {
		if b, err := os.ReadFile(path); err == nil {
			json.Unmarshal(b, &known) // a damaged file is measured again and rewritten
		}
	}
	if rate, stale := remembered(known, key, time.Now()); rate > 0 {
		r := known[key]
		return rate, fmt.Sprintf("peak remembered from %s (%s)", r.MeasuredAt.Format("2006-01-02 15:04"), path), nil
	} else if stale != "" {
		note = stale + ": "
	}
	h, err := startHelper(ctx, exe, "peak", dir, fmt.Sprint(peakSeconds))
	if err != nil {
		return 0, "", fmt.Errorf("measure the peak write rate of %s: %w", dir, err)
	}
	defer h.stop()
	line, err := h.out.ReadString('\n')
	var res struct {
		BytesPerSec float64 `json:"bytes_per_sec"`
	}
	if err != nil || json.Unmarshal([]byte(line), &res) != nil || res.BytesPerSec <= 0 {
		if ctx.Err() != nil {
			return 0, "", ctx.Err()
		}
		return 0, "", fmt.Errorf("measure the peak write rate of %s: no result from the writer", dir)
	}
	note += fmt.Sprintf("peak measured now: %d s of 1 MiB O_DIRECT writes, %d in flight", peakSeconds, writerDepth)
	if key != "" {
		known[key] = peakRecord{BytesPerSec: res.BytesPerSec, MeasuredAt: time.Now(), Dir: dir}
		if writePeaks(path, known) == nil {
			note += ", remembered in " + path
		}
	}
	return res.BytesPerSec, note, nil
}

// remembered is the peak known for key, 0 when there is none to use;
// stale says why a peak known is not used.
func remembered(known map[string]peakRecord, key string, now time.Time) (rate float64, stale string) {
	r, ok := known[key]
	switch {
	case !ok || key == "" || r.BytesPerSec <= 0:
		return 0, ""
	case now.Sub(r.MeasuredAt) > peakMaxAge:
		return 0, fmt.Sprintf("the peak remembered from %s was older than %d days", r.MeasuredAt.Format("2006-01-02 15:04"), int(peakMaxAge.Hours()/24))
	case r.MeasuredAt.After(now.Add(time.Minute)):
		return 0, fmt.Sprintf("the peak remembered from %s is dated in the future (the clock moved)", r.MeasuredAt.Format("2006-01-02 15:04"))
	}
	return r.BytesPerSec, ""
}

// peakMaxAge is how long a remembered peak is used: a virtual disk's
// allowance, a cloud volume's class or the disk itself may change under
// the same name and size.
const peakMaxAge = 7 * 24 * time.Hour

// writePeaks replaces the peaks file at path whole (a temporary file
// renamed over it), so that a perfsleuth reading it meanwhile never reads
// half of it.
func writePeaks(path string, known map[string]peakRecord) error {
	b, err := json.MarshalIndent(known, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), peakFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails once renamed
	_, err = tmp.Write(append(b, '\n'))
	if err2 := tmp.Close(); err == nil {
		err = err2
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return err
}
