package target

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/workload"
	"github.com/perfsleuth/perfsleuth/internal/workload/fileio"
	"github.com/perfsleuth/perfsleuth/internal/workload/null"
	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite"
)

// Builtin is one of perfsleuth's own benchmarks, seen from the targets.
type Builtin struct {
	Name string
	// Validate checks the target's settings and fills target.Notices.
	Validate func(t *model.Target) error
	// New builds the workload for a validated target whose Dir is resolved.
	New func(t model.Target) (workload.Workload, error)
	// dir points at the settings' directory fields; nil for a benchmark
	// that has no files.
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
	"null": {
		Name: "null",
		Validate: func(t *model.Target) error {
			if t.Null == nil {
				return fmt.Errorf("null target has no settings")
			}
			return null.Validate(t.Null)
		},
		New: func(t model.Target) (workload.Workload, error) { return null.New(*t.Null), nil },
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

// Validate checks a built-in target's settings and fills its notices.
func Validate(t *model.Target) error {
	b, err := Lookup(t.Kind)
	if err != nil {
		return err
	}
	return b.Validate(t)
}

// resolveDir gives the target a working directory: the one the user named,
// made absolute, or a new perfsleuth-KIND-* directory in the current
// directory (not /tmp, which is often tmpfs and would benchmark memory). It
// returns a function that removes a directory it created, for the exit paths
// where the workload could not clean up itself (the child was killed).
func (b *Builtin) resolveDir(t *model.Target) (removeCreated func(), err error) {
	if b.dir == nil {
		return func() {}, nil
	}
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

// DirOf is the working directory of a target ("" when it has none).
func DirOf(t *model.Target) string {
	switch {
	case t.FileIO != nil:
		return t.FileIO.Dir
	case t.SQLite != nil:
		return t.SQLite.Dir
	case t.Command != nil:
		return t.Command.Dir
	}
	return ""
}

// setup validates a built-in target and gives it its directory. removeDir
// removes a directory it created (unless --keep).
func setup(t *model.Target) (b *Builtin, removeDir func(), err error) {
	if b, err = Lookup(t.Kind); err != nil {
		return nil, nil, err
	}
	if err = b.Validate(t); err != nil {
		return nil, nil, err
	}
	if removeDir, err = b.resolveDir(t); err != nil {
		return nil, nil, err
	}
	return b, removeDir, nil
}
