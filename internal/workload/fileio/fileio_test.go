package fileio

import (
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

func TestValidateRejects(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		edit func(c *model.FileIOConfig)
		want string
	}{
		{"unknown rw", func(c *model.FileIOConfig) { c.RW = "random" }, `--rw "random" is not one of read, write, randread, randwrite, readwrite, randrw`},
		{"rwmix above 100", func(c *model.FileIOConfig) { c.RWMixRead = 101 }, "--rwmix-read 101 is not a percentage"},
		{"rwmix negative", func(c *model.FileIOConfig) { c.RWMixRead = -1 }, "--rwmix-read -1 is not a percentage"},
		{"bs zero", func(c *model.FileIOConfig) { c.BS = 0 }, "--bs 0: the block size must be at least 1 byte"},
		{"size negative", func(c *model.FileIOConfig) { c.Size = -5 }, "--size -5: the total file size must be at least 1 byte"},
		{"files zero", func(c *model.FileIOConfig) { c.Files = 0 }, "--files must be at least 1"},
		{"threads zero", func(c *model.FileIOConfig) { c.Threads = 0 }, "--threads must be at least 1"},
		{"fsync negative", func(c *model.FileIOConfig) { c.Fsync = -1 }, "--fsync -1 is negative"},
		{"duration negative", func(c *model.FileIOConfig) { c.DurationSec = -1 }, "--duration -1s is negative"},
		{"ops negative", func(c *model.FileIOConfig) { c.Ops = -3 }, "--ops -3 is negative"},
		{"sync and dsync", func(c *model.FileIOConfig) { c.Sync, c.Dsync = true, true }, "--sync and --dsync together: pick one"},
		{"fdatasync alone", func(c *model.FileIOConfig) { c.Fdatasync = true }, "--fdatasync changes the syncs of --fsync N or --end-fsync"},
		{"bs larger than file", func(c *model.FileIOConfig) { c.BS, c.Size = 8192, 4096 },
			"--bs 8192 is larger than each file (--size 4096 / --files 1 = 4096 bytes): lower --bs or raise --size"},
		{"bs larger than each of several files", func(c *model.FileIOConfig) { c.BS, c.Size, c.Files = 4096, 8192, 4 },
			"--bs 4096 is larger than each file (--size 8192 / --files 4 = 2048 bytes)"},
		{"sequential threads without a block each", func(c *model.FileIOConfig) { c.RW, c.BS, c.Size, c.Threads = "write", 4096, 8192, 3 },
			"--threads 3 share 1 file(s) of 2 block(s) each in sequential mode"},
		{"direct bs not a multiple of the logical block size", func(c *model.FileIOConfig) { c.Direct, c.BS = true, 1000 },
			"--direct needs --bs to be a multiple of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			c.Dir = dir
			tt.edit(&c)
			err := Validate(&c)
			if err == nil {
				t.Fatalf("Validate accepted %+v", c)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\ndoes not contain %q", err, tt.want)
			}
			if err.Error() != strings.ToLower(err.Error()[:1])+err.Error()[1:] {
				t.Errorf("error %q does not start in lower case", err)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	c := Defaults()
	c.DurationSec, c.Ops = 0, 0
	if err := Validate(&c); err != nil {
		t.Fatal(err)
	}
	if c.DurationSec != defaultDurationSec {
		t.Errorf("neither --duration nor --ops: DurationSec = %g, want the default %d", c.DurationSec, defaultDurationSec)
	}

	c = Defaults()
	c.DurationSec, c.Ops = 0, 500
	if err := Validate(&c); err != nil {
		t.Fatal(err)
	}
	if c.DurationSec != 0 {
		t.Errorf("--ops alone: DurationSec = %g, want 0 (bounded by ops only)", c.DurationSec)
	}

	// The device under t.TempDir() has a logical block size of 512 or 4096;
	// 4096 is a multiple of either.
	c = Defaults()
	c.Direct, c.Dir = true, t.TempDir()
	if err := Validate(&c); err != nil {
		t.Errorf("--direct --bs 4096: %v", err)
	}
	// Sequential threads sharing a file, each with exactly one block.
	c = Defaults()
	c.RW, c.BS, c.Size, c.Threads = "read", 4096, 3*4096, 3
	if err := Validate(&c); err != nil {
		t.Errorf("3 threads on 3 blocks: %v", err)
	}
}

func TestFileSizeRoundsDownToBlocks(t *testing.T) {
	c := Defaults()
	c.Size, c.Files, c.BS = 10000, 2, 4096
	if got := fileSize(c); got != 4096 {
		t.Errorf("fileSize(10000 bytes / 2 files, bs 4096) = %d, want 4096", got)
	}
	if !strings.Contains(strings.Join(Notices(c), "\n"), "each file is 4 KiB") {
		t.Errorf("no notice of the rounding in %q", Notices(c))
	}
}

func TestNotices(t *testing.T) {
	has := func(t *testing.T, c model.FileIOConfig, want ...string) {
		t.Helper()
		all := strings.Join(Notices(c), "\n")
		for _, w := range want {
			if !strings.Contains(all, w) {
				t.Errorf("notices lack %q:\n%s", w, all)
			}
		}
	}
	hasNot := func(t *testing.T, c model.FileIOConfig, unwanted string) {
		t.Helper()
		if all := strings.Join(Notices(c), "\n"); strings.Contains(all, unwanted) {
			t.Errorf("notices contain %q:\n%s", unwanted, all)
		}
	}

	c := Defaults()
	has(t, c, "buffered reads: files were just written by prepare", "syncs: none (this run does not write)")

	c = Defaults()
	c.RW = "randwrite"
	// The sync mode is stated even when everything is off.
	has(t, c, "sync during the run: off", "fsync of every written file at the end: off", "O_SYNC/O_DSYNC: off",
		"buffered writes without fsync: data may still be in the page cache")
	hasNot(t, c, "buffered reads")

	c.EndFsync = true
	has(t, c, "fsync of every written file at the end: on (timed as part of the run)")
	hasNot(t, c, "buffered writes without fsync")

	c = Defaults()
	c.RW, c.Fsync = "write", 1
	has(t, c, "--fsync 1: a sync (fsync) after every write")
	c.Fsync, c.Fdatasync = 8, true
	has(t, c, "--fsync 8: a sync (fdatasync) after every 8 writes")

	c = Defaults()
	c.RW, c.Sync = "randwrite", true
	has(t, c, "O_SYNC: every write waits for the device")
	c.Sync, c.Dsync = false, true
	has(t, c, "O_DSYNC: every write waits for the device")

	c = Defaults()
	c.Direct = true
	has(t, c, "O_DIRECT: reads and writes bypass the page cache")
	hasNot(t, c, "buffered reads")

	c = Defaults()
	c.RW, c.Threads, c.Files = "write", 4, 2
	has(t, c, "4 threads share 2 file(s): threads writing the same file serialise on its inode lock")
	c.RW = "read"
	hasNot(t, c, "inode lock")

	c = Defaults()
	c.RW, c.Fsync = "randread", 4
	has(t, c, "sync options have no effect: this run does not write")

	c = Defaults()
	c.Ops = 1000
	has(t, c, "stops after 1000 reads+writes or 10s, whichever comes first")
}

func TestHuman(t *testing.T) {
	for n, want := range map[int64]string{
		512:         "512 bytes",
		4096:        "4 KiB",
		1536 * 1024: "1.5 MiB",
		1 << 30:     "1 GiB",
		10 << 30:    "10 GiB",
	} {
		if got := human(n); got != want {
			t.Errorf("human(%d) = %q, want %q", n, got, want)
		}
	}
}
