package rows

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// Title is what ran, as the first line of a view says it.
type Title struct {
	// Verb is "bench", "observe", "diagnose" or "compare --run".
	Verb string
	// Runs is how many runs a diagnose (or an interleaved comparison) made
	// in all; Side is the comparison's side, "A" or "B".
	Runs        int
	Side        string
	What        string
	Interrupted bool
}

// TitleOf says what ran.
func TitleOf(run *model.Run) Title {
	t := Title{Verb: "bench", What: Describe(run.Target), Interrupted: run.Interrupted}
	if run.Observation != nil {
		t.Verb = "observe"
	}
	if ex := run.Experiments; ex != nil {
		t.Verb, t.Runs = "diagnose", len(ex.Order)
		if ex.Pair != nil {
			t.Verb, t.Side = "compare --run", ex.Pair.Side
		}
	}
	return t
}

// Describe says what ran in one line: the workload and its main settings,
// the command, or the process.
func Describe(t model.Target) string {
	switch {
	case t.FileIO != nil:
		c := t.FileIO
		s := fmt.Sprintf("fileio %s, %s blocks, %d file(s), %s, %d thread(s)",
			c.RW, units.FormatSize(c.BS), c.Files, units.FormatSize(c.Size), c.Threads)
		if c.Engine() != "psync" {
			s += fmt.Sprintf(", %s at depth %d", c.Engine(), c.Depth())
		}
		return s
	case t.SQLite != nil:
		c := t.SQLite
		return fmt.Sprintf("sqlite %s, journal=%s sync=%s, %d rows, %d per tx",
			strings.Join(c.Phases, "/"), c.Journal, c.Sync, c.Rows, c.TxSize)
	case t.Command != nil:
		return "command: " + units.ShellJoin(t.Command.Argv)
	case t.PID != nil:
		return fmt.Sprintf("pid %d (%s)", t.PID.PID, t.PID.Comm)
	}
	return t.Kind
}

// HostLine describes the machine: "vm, Linux 6.1.0 x86_64, 2 CPUs, 4 GiB
// memory" (the kernel's release, without its build string).
func HostLine(h model.Host) string {
	mem := ""
	if h.MemTotalBytes > 0 {
		mem = ", " + units.FormatSize(h.MemTotalBytes) + " memory"
	}
	release, _, _ := strings.Cut(h.Kernel, " ")
	return fmt.Sprintf("%s, Linux %s %s, %d CPUs%s", OrDash(h.Hostname), release, h.Arch, h.CPUsOnline, mem)
}

// CPUGroups describes the CPUs as runs of the same type and frequency, so a
// big.LITTLE phone reads "0-3 Cortex-A53 1.80 GHz; 4-7 Cortex-A73 2.36 GHz".
func CPUGroups(cpus []model.CPU) string {
	type key struct {
		typ string
		max int64
		gov string
	}
	var parts []string
	for i := 0; i < len(cpus); {
		k := key{cpus[i].Type, cpus[i].MaxFreqKHz, cpus[i].Governor}
		j := i
		for j+1 < len(cpus) && (key{cpus[j+1].Type, cpus[j+1].MaxFreqKHz, cpus[j+1].Governor}) == k {
			j++
		}
		ids := fmt.Sprint(cpus[i].ID)
		if j > i {
			ids += fmt.Sprintf("-%d", cpus[j].ID)
		}
		p := ids + " " + k.typ
		if k.max > 0 {
			p += fmt.Sprintf(" %.2f GHz", float64(k.max)/1e6)
		}
		if k.gov != "" {
			p += " (" + k.gov + ")"
		}
		parts = append(parts, p)
		i = j + 1
	}
	return strings.Join(parts, "; ")
}

// StorageDesc describes the file system and devices behind the workload's
// directory: "DIR: ext4 on vda, scheduler mq-deadline, non-rotational,
// 78 GiB free of 252 GiB".
func StorageDesc(s *model.Storage) string {
	dev := s.Device
	if len(s.Disks) > 0 && !(len(s.Disks) == 1 && s.Disks[0] == s.Device) {
		dev += " (disks " + strings.Join(s.Disks, ",") + ")"
	}
	desc := fmt.Sprintf("%s: %s on %s", s.Dir, s.FSType, OrDash(dev))
	if s.Scheduler != "" {
		desc += ", scheduler " + s.Scheduler
	}
	if s.Rotational != nil {
		if *s.Rotational {
			desc += ", rotational"
		} else {
			desc += ", non-rotational"
		}
	}
	if s.FreeBytes > 0 {
		desc += fmt.Sprintf(", %s free of %s", units.FormatSize(s.FreeBytes), units.FormatSize(s.SizeBytes))
	}
	return desc
}

// Setting is one field of a workload's settings, named as in the JSON
// record, its value formatted for people.
type Setting struct{ Name, Value string }

// Settings lists a settings struct's fields in declaration order, keys as
// in the JSON record, so the views and the record say the same thing.
func Settings(v any) []Setting {
	rv := reflect.Indirect(reflect.ValueOf(v))
	if !rv.IsValid() || rv.Kind() != reflect.Struct {
		return nil
	}
	rt := rv.Type()
	var out []Setting
	for i := 0; i < rt.NumField(); i++ {
		name := strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		f := rv.Field(i)
		var s string
		switch {
		case name == "bs" || name == "size":
			s = units.FormatSize(f.Int())
			s = strings.ReplaceAll(s, " ", "")
		case name == "duration_sec":
			if f.Float() == 0 {
				s = "0"
			} else {
				s = fmt.Sprintf("%gs", f.Float())
			}
			name = "duration"
		case f.Kind() == reflect.Slice:
			var items []string
			for j := 0; j < f.Len(); j++ {
				items = append(items, fmt.Sprint(f.Index(j).Interface()))
			}
			s = strings.Join(items, ",")
		case model.LegacySetting(name, "") != "" && f.IsZero():
			s = model.LegacySetting(name, "")
		case f.Kind() == reflect.String && f.String() == "":
			s = `""`
		default:
			s = fmt.Sprint(f.Interface())
		}
		out = append(out, Setting{name, s})
	}
	return out
}

// TargetSettings lists what the run was given: a workload's settings, a
// command's argv and directory, a process's pid, comm and command line.
// For a process it also returns how long it was to be observed, last in
// the list, for the view to print (0: until it exits).
func TargetSettings(t model.Target) ([]Setting, *float64) {
	switch {
	case t.FileIO != nil:
		return Settings(t.FileIO), nil
	case t.SQLite != nil:
		return Settings(t.SQLite), nil
	case t.Command != nil:
		// Quoted as a shell reads it: "bash -c 'sqlite3 t.db < s.sql'".
		return append([]Setting{{"argv", units.ShellJoin(t.Command.Argv)}, {"dir", t.Command.Dir}}, with(t)...), nil
	case t.PID != nil:
		d := t.PID.DurationSec
		return append([]Setting{{"pid", fmt.Sprint(t.PID.PID)}, {"comm", t.PID.Comm}, {"cmdline", t.PID.Cmdline}}, with(t)...), &d
	}
	return nil, nil
}

// with lists the running processes observed with the workload.
func with(t model.Target) []Setting {
	var out []Setting
	for _, p := range t.With {
		out = append(out, Setting{"with", fmt.Sprintf("pid %d (%s: %s)", p.PID, p.Comm, p.Cmdline)})
	}
	return out
}
