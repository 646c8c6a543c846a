package probe

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// CalibrationMaxAge is how long a calibration kept on disk is used: the
// costs depend on the host and its kernel, which a boot id pins, and a
// little on what else runs, which an hour bounds.
const CalibrationMaxAge = time.Hour

// Calibrations keeps a probe's calibrated costs per setting: they depend on
// the host, not on the workload, and calibrating takes about a second (two
// loads of the probe), so each setting is measured once per process and,
// when Name is set, kept in the user's cache directory for the next
// perfsleuth of the same boot within CalibrationMaxAge, as long as the
// probe's programs (Object, the BPF object's bytes) are the same.
type Calibrations[K comparable, C any] struct {
	Name   string
	Object []byte

	mu   sync.Mutex
	done map[K]calibration[C]
}

type calibration[C any] struct {
	costs C
	note  string
}

// Get returns the costs for key, measured by measure the first time, and
// measure's error in words ("" when it had none). Calls for the same key
// wait for the first to finish.
func (c *Calibrations[K, C]) Get(key K, measure func() (C, error)) (C, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if got, ok := c.done[key]; ok {
		return got.costs, got.note
	}
	if c.done == nil {
		c.done = map[K]calibration[C]{}
	}
	path := c.path(key)
	if costs, ok := loadCalibration[C](path); ok {
		c.done[key] = calibration[C]{costs: costs}
		return costs, ""
	}
	costs, err := measure()
	got := calibration[C]{costs: costs}
	if err != nil {
		got.note = err.Error()
	} else {
		// A cache that cannot be written costs the next run a calibration,
		// nothing else.
		_ = storeCalibration(path, costs)
	}
	c.done[key] = got
	return got.costs, got.note
}

// path is where the calibration for key is kept, "" when it is not (no
// Name, no cache directory).
func (c *Calibrations[K, C]) path(key K) string {
	if c.Name == "" {
		return ""
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	h := sha256.New()
	h.Write(c.Object)
	fmt.Fprintf(h, "\x00%#v", key)
	return filepath.Join(dir, "perfsleuth", fmt.Sprintf("calibration-%s-%x.json", c.Name, h.Sum(nil)[:8]))
}

// storedCalibration is a calibration file.
type storedCalibration[C any] struct {
	BootID     string    `json:"boot_id"`
	MeasuredAt time.Time `json:"measured_at"`
	Costs      C         `json:"costs"`
}

// bootIDPath is the kernel's id of this boot.
var bootIDPath = "/proc/sys/kernel/random/boot_id"

func bootID() string {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// loadCalibration reads the calibration at path if it was made in this
// boot, within CalibrationMaxAge.
func loadCalibration[C any](path string) (C, bool) {
	var s storedCalibration[C]
	if path == "" {
		return s.Costs, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return s.Costs, false
	}
	if err := json.Unmarshal(b, &s); err != nil {
		var zero C
		return zero, false
	}
	age := time.Since(s.MeasuredAt)
	if id := bootID(); id == "" || s.BootID != id || age < 0 || age > CalibrationMaxAge {
		var zero C
		return zero, false
	}
	return s.Costs, true
}

// storeCalibration writes costs to path, through a temporary file renamed
// over it so that a reader never sees half of one.
func storeCalibration[C any](path string, costs C) error {
	id := bootID()
	if path == "" || id == "" {
		return nil
	}
	b, err := json.Marshal(storedCalibration[C]{BootID: id, MeasuredAt: time.Now(), Costs: costs})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".calibration-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr == nil && cerr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil || cerr != nil {
		os.Remove(f.Name())
		if werr == nil {
			werr = cerr
		}
	}
	return werr
}
