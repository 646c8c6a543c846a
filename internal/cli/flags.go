package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
	"github.com/perfsleuth/perfsleuth/internal/workload/fileio"
	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite"
)

// sizeValue is a byte-size flag ("4k", "1GiB"; binary units, as fio's).
type sizeValue struct{ p *int64 }

func (v sizeValue) String() string {
	if v.p == nil {
		return ""
	}
	return units.FormatSize(*v.p)
}
func (v sizeValue) Set(s string) error {
	n, err := units.ParseSize(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}
func (sizeValue) Type() string { return "size" }

// secondsValue is a duration flag stored as float seconds ("10s", "1m30s", or plain seconds).
type secondsValue struct{ p *float64 }

func (v secondsValue) String() string {
	if v.p == nil {
		return ""
	}
	return (time.Duration(*v.p * float64(time.Second))).String()
}
func (v secondsValue) Set(s string) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return fmt.Errorf("%q is negative", s)
		}
		*v.p = f
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration: use e.g. 10s, 2m or 1m30s", s)
	}
	if d < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	*v.p = d.Seconds()
	return nil
}
func (secondsValue) Type() string { return "duration" }

// listValue is a comma-separated list flag.
type listValue struct{ p *[]string }

func (v listValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}
func (v listValue) Set(s string) error {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	*v.p = out
	return nil
}
func (listValue) Type() string { return "list" }

// bindFileIO declares the fileio flags (named as fio names them) and returns
// the settings they fill, starting from the benchmark's defaults.
func bindFileIO(fs *pflag.FlagSet) *model.FileIOConfig {
	c := fileio.Defaults()
	fs.StringVar(&c.RW, "rw", c.RW, "pattern: read, write, randread, randwrite, readwrite, randrw")
	fs.IntVar(&c.RWMixRead, "rwmix-read", c.RWMixRead, "percent of reads in readwrite and randrw")
	fs.Var(sizeValue{&c.BS}, "bs", "block size of every read and write (binary units: 4k = 4096)")
	fs.Var(sizeValue{&c.Size}, "size", "total size of all files")
	fs.IntVar(&c.Files, "files", c.Files, "number of files the size is spread over")
	fs.IntVar(&c.Threads, "threads", c.Threads, "number of threads doing IO")
	fs.BoolVar(&c.Direct, "direct", c.Direct, "open files with O_DIRECT (bypass the page cache)")
	fs.IntVar(&c.Fsync, "fsync", c.Fsync, "sync a file after every N writes to it by a thread (0: never)")
	fs.BoolVar(&c.Fdatasync, "fdatasync", c.Fdatasync, "use fdatasync instead of fsync for --fsync and --end-fsync")
	fs.BoolVar(&c.EndFsync, "end-fsync", c.EndFsync, "sync every written file once at the end (timed as part of the run)")
	fs.BoolVar(&c.Verify, "verify", c.Verify, "after the run, read back every block it wrote and check its offset and CRC-32C, sealed into each block as it was written (fio's verify; not timed); a block not as written fails the run")
	fs.BoolVar(&c.Sync, "sync", c.Sync, "open files with O_SYNC (every write waits for the device)")
	fs.BoolVar(&c.Dsync, "dsync", c.Dsync, "open files with O_DSYNC")
	fs.Var(secondsValue{&c.DurationSec}, "duration", "how long the measured phase runs (0: until --ops)")
	fs.Int64Var(&c.Ops, "ops", c.Ops, "stop after this many reads+writes in all (0: until --duration)")
	fs.StringVar(&c.Dir, "dir", c.Dir, "directory for the files (default: a new perfsleuth-fileio-* directory here, removed afterwards)")
	fs.BoolVar(&c.Keep, "keep", c.Keep, "keep the files afterwards (a later run with the same --dir reuses them)")
	fs.BoolVar(&c.Force, "force", c.Force, "use a --dir that holds files perfsleuth did not create")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "seed of the random offsets")
	fs.StringVar(&c.IOEngine, "ioengine", c.IOEngine, "how each thread issues its IO: psync (one at a time), io_uring or libaio (--iodepth in flight; libaio needs --direct to be asynchronous)")
	fs.IntVar(&c.IODepth, "iodepth", c.IODepth, "requests each thread keeps in flight (io_uring, libaio)")
	fs.IntVar(&c.IODepthBatch, "iodepth-batch", c.IODepthBatch, "requests submitted per call (io_uring, libaio; at most --iodepth)")
	return &c
}

// bindSQLite declares the sqlite flags and returns the settings they fill.
func bindSQLite(fs *pflag.FlagSet) *model.SQLiteConfig {
	c := sqlite.Defaults()
	fs.IntVar(&c.Rows, "rows", c.Rows, "statements per phase (rows inserted, updated, selected, deleted)")
	fs.IntVar(&c.TxSize, "tx-size", c.TxSize, "statements per transaction (1: autocommit, as AndroBench)")
	fs.StringVar(&c.Journal, "journal", c.Journal, "journal_mode: wal, delete, truncate, persist, memory, off")
	fs.StringVar(&c.Sync, "sync", c.Sync, "synchronous: off, normal, full, extra")
	fs.IntVar(&c.PageSize, "page-size", c.PageSize, "page_size in bytes (power of two, 512 to 65536)")
	fs.IntVar(&c.CacheSize, "cache-size", c.CacheSize, "cache_size (pages; negative: KiB), as PRAGMA cache_size")
	fs.BoolVar(&c.Index, "index", c.Index, "index the name column (--index=false for none)")
	fs.Var(listValue{&c.Phases}, "phases", "phases in order, from insert, update, select, delete")
	fs.StringVar(&c.Dir, "dir", c.Dir, "directory for the database (default: a new perfsleuth-sqlite-* directory here, removed afterwards)")
	fs.BoolVar(&c.Keep, "keep", c.Keep, "keep the database afterwards")
	fs.BoolVar(&c.Force, "force", c.Force, "use a --dir that holds files perfsleuth did not create")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "seed of the shuffled key order and row contents")
	return &c
}
