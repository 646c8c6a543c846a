// Package runner turns a validated target into a run record: it runs a
// built-in benchmark in-process (bench), or runs a workload under observation
// (observe: a built-in benchmark in a child perfsleuth process, any command,
// or an existing PID) and assembles the model.Run. It owns every exit path:
// children are stopped and files removed whether the run ends normally, on
// error, on Ctrl-C or when the target dies.
package runner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/workload"
	"github.com/perfsleuth/perfsleuth/internal/workload/fileio"
	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite"
)

// Builtin is one of perfsleuth's own benchmarks, seen from the runner.
type Builtin struct {
	Name string
	// Validate checks the target's settings and fills target.Notices.
	Validate func(t *model.Target) error
	// New builds the workload for a validated target whose Dir is resolved.
	New func(t model.Target) (workload.Workload, error)
	// dir points at the settings' directory fields.
	dir func(t *model.Target) (dir *string, created *bool, keep bool)
}

// Builtins lists the built-in benchmarks by name.
var Builtins = map[string]*Builtin{
	"fileio": {
		Name: "fileio",
		Validate: func(t *model.Target) error {
			if t.FileIO == nil {
				return fmt.Errorf("fileio target has no settings")
			}
			if err := fileio.Validate(t.FileIO); err != nil {
				return err
			}
			t.Notices = fileio.Notices(*t.FileIO)
			return nil
		},
		New: func(t model.Target) (workload.Workload, error) { return fileio.New(*t.FileIO) },
		dir: func(t *model.Target) (*string, *bool, bool) {
			return &t.FileIO.Dir, &t.FileIO.DirCreated, t.FileIO.Keep
		},
	},
	"sqlite": {
		Name: "sqlite",
		Validate: func(t *model.Target) error {
			if t.SQLite == nil {
				return fmt.Errorf("sqlite target has no settings")
			}
			if err := sqlite.Validate(t.SQLite); err != nil {
				return err
			}
			t.Notices = sqlite.Notices(*t.SQLite)
			return nil
		},
		New: func(t model.Target) (workload.Workload, error) { return sqlite.New(t.SQLite) },
		dir: func(t *model.Target) (*string, *bool, bool) {
			return &t.SQLite.Dir, &t.SQLite.DirCreated, t.SQLite.Keep
		},
	},
}

// Lookup returns the built-in benchmark for a target kind.
func Lookup(kind string) (*Builtin, error) {
	b, ok := Builtins[kind]
	if !ok {
		return nil, fmt.Errorf("unknown workload %q: use fileio or sqlite", kind)
	}
	return b, nil
}

// resolveDir gives the target a working directory: the one the user named,
// made absolute, or a new perfsleuth-KIND-* directory in the current
// directory (not /tmp, which is often tmpfs and would benchmark memory). It
// returns a function that removes a directory it created, for the exit paths
// where the workload could not clean up itself (the child was killed).
func (b *Builtin) resolveDir(t *model.Target) (removeCreated func(), err error) {
	dir, created, keep := b.dir(t)
	if *dir != "" {
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return nil, fmt.Errorf("--dir %s: %w", *dir, err)
		}
		*dir = abs
		return func() {}, nil
	}
	d, err := os.MkdirTemp(".", "perfsleuth-"+b.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("cannot create a working directory in the current directory (%w): cd to a writable directory or give --dir", err)
	}
	abs, err := filepath.Abs(d)
	if err != nil {
		os.Remove(d)
		return nil, err
	}
	*dir, *created = abs, true
	return func() {
		if !keep {
			os.RemoveAll(abs)
		}
	}, nil
}
