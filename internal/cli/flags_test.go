package cli_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/perfsleuth/perfsleuth/internal/cli"
)

// badValue is a value a flag must refuse and a phrase its error must hold.
type badValue struct{ value, want string }

// byType are bad values every flag of a type must refuse: the words are
// perfsleuth's (root.go's parserWords), not the Go parser's.
var byType = map[string]badValue{
	"int":      {"x", "not a whole number"},
	"int64":    {"x", "not a whole number"},
	"intSlice": {"x", "not a whole number"},
	"float64":  {"x", "not a number"},
	"size":     {"lots", "not a size"},
	"duration": {"soon", "not a duration"},
	"bool":     {"maybe", "not true or false"},
	"share":    {"x", "not a share"},
}

// TestEveryFlagRefusesABadValue walks the whole command tree: every flag of
// every command is given a value it must refuse (its type's, above, and
// those of its meaning, below), and each must end in exit status 2, one
// error line that names the flag or the value, nothing on stdout, and
// nothing written. A flag that takes any string (a path, a name, a list)
// must be listed in meaning: a new one fails this test until it is.
func TestEveryFlagRefusesABadValue(t *testing.T) {
	work := t.TempDir()
	records := t.TempDir()
	rec := filepath.Join(records, "rec.json")
	if r := run(t, records, "bench", "fileio", "--size", "64k", "--ops", "10", "--json", rec); r.code != 0 {
		t.Fatalf("make a record (%d): %s", r.code, r.stderr)
	}
	obs := filepath.Join(records, "obs.json")
	if r := run(t, records, "observe", "--stacks", "--interval", "100ms", "--json", obs, "--", "sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"); r.code != 0 {
		t.Fatalf("make an observed record (%d): %s", r.code, r.stderr)
	}
	missing := "/nonexistent/perfsleuth/out"
	paths := []badValue{{missing, "/nonexistent"}, {work, "is a directory"}}
	// around is each command's arguments before and after the flag: a
	// run that would be valid and short without it.
	fileio := []string{"--size", "64k", "--ops", "10"}
	around := map[string][2][]string{
		"bench fileio":     {append([]string{"bench", "fileio"}, fileio...), nil},
		"bench sqlite":     {{"bench", "sqlite", "--rows", "10"}, nil},
		"bench age":        {{"bench", "age", "--area", "64k", "--write", "64k"}, nil},
		"agent":            {{"agent", "-p", strconv.Itoa(os.Getpid()), "--window", "1s"}, nil},
		"observe":          {{"observe"}, {"--", "true"}},
		"observe fileio":   {append([]string{"observe", "fileio"}, fileio...), nil},
		"observe sqlite":   {{"observe", "sqlite", "--rows", "10"}, nil},
		"diagnose":         {{"diagnose", "--conditions", "cpu-half", "--repeat", "2"}, {"--", "true"}},
		"diagnose fileio":  {append([]string{"diagnose", "fileio", "--conditions", "cpu-half", "--repeat", "2"}, fileio...), nil},
		"diagnose sqlite":  {{"diagnose", "sqlite", "--conditions", "cpu-half", "--repeat", "2", "--rows", "10"}, nil},
		"compare":          {{"compare", rec, rec}, nil},
		"compare --run":    {{"compare", "--run", "true", "--run", "true", "--repeat", "2"}, nil},
		"diagnose --scale": {{"diagnose"}, {"--", "true"}},
		"doctor":           {{"doctor"}, nil},
		"export":           {{"export", obs}, nil},
		"report":           {{"report", rec}, nil},
	}
	fileioMeaning := map[string][]badValue{
		"dir": {{missing, "does not exist"}, {rec, "not a directory"}}, "json": paths,
		"rw": {{"sideways", "randread"}}, "bs": {{"0", "at least 1 byte"}}, "size": {{"0", "at least 1 byte"}},
		"files": {{"0", "at least 1"}}, "threads": {{"0", "at least 1"}, {"100000", "ulimit -n"}},
		"fsync": {{"-1", "negative"}}, "ops": {{"-1", "negative"}}, "duration": {{"-1s", "negative"}},
		"rwmix-read": {{"101", "percentage"}},
		"ioengine":   {{"posixaio", "psync, libaio, io_uring"}}, "iodepth": {{"-1", "1 or more"}, {"4", "psync issues one request"}},
		"iodepth-batch": {{"-1", "1 or more"}, {"2", "more than --iodepth 1"}},
	}
	sqliteMeaning := map[string][]badValue{
		"dir": {{missing, "does not exist"}}, "json": paths,
		"journal": {{"sometimes", "wal"}}, "sync": {{"sometimes", "normal"}}, "phases": {{"fly", "insert"}, {"", "no phases"}},
		"rows": {{"0", "--rows 1"}}, "tx-size": {{"0", "--tx-size 1"}}, "page-size": {{"1000", "power of two"}},
	}
	observeMeaning := map[string][]badValue{
		"json": paths, "html": paths, "output": paths, "metric": {{"(", "regular expression"}},
		"pid": {{"0", "not valid"}, {"-1", "not valid"}}, "interval": {{"0", "too short"}},
	}
	meaning := map[string]map[string][]badValue{
		"bench fileio": fileioMeaning, "observe fileio": fileioMeaning, "diagnose fileio": fileioMeaning,
		"bench sqlite": sqliteMeaning, "observe sqlite": sqliteMeaning, "diagnose sqlite": sqliteMeaning,
		"observe": observeMeaning,
		"bench age": {
			"dir": {{missing, "no such file"}, {rec, "not a directory"}}, "json": paths,
			"area": {{"0", "smaller than one small file"}}, "small": {{"0", "above 0"}}, "write": {{"0", "above 0"}},
			"delete": {{"0", "above 0"}, {"2", "at most 1"}, {"150%", "at most 1"}},
		},
		"diagnose": {
			"json": paths, "html": paths, "output": paths, "metric": {{"(", "regular expression"}},
			"pid": {{"0", "--quick"}}, "interval": {{"0", "too short"}},
			"conditions": {{"moon-phase", "moon-phase"}}, "evict": {{missing, "no such file"}},
			"scale":  {{"garbage", "threads=N1,N2"}, {"threads=4,2", "increasing"}},
			"repeat": {{"1", "2 or more"}}, "max-repeat": {{"1", "below --repeat"}},
			"budget": {{"-1s", "negative"}}, "io-share": {{"0", "--io-share"}, {"101", "--io-share"}},
			"cache-limit": {{"64MiB", "add cache-limit to --conditions"}}, "io-peak-iops": {{"-1", "above 0"}},
		},
		"compare": {
			"json": paths, "html": paths, "metric": {{"(", "regular expression"}},
			"run": {{"true", "twice"}}, "repeat": {{"1", "2 or more"}},
			"save-a": paths, "save-b": paths,
		},
		"doctor": {"dir": {{missing, "no such file"}, {rec, "not a directory"}}},
		"agent": {
			"cgroup": {{missing, "not a cgroup directory"}}, "listen": {{"256.0.0.1:1", "--listen"}},
			"pid":    {{"0", "not a process id"}, {"999999999", "no such process"}},
			"window": {{"10ms", "1s or more"}}, "max-processes": {{"0", "1 or more"}},
			"kubepods": {{missing, "not a directory"}}, "host-root": {{missing, "not a directory"}}, "max-cgroups": {{"0", "1 or more"}},
			"otlp": {{"ftp://collector", "OTLP/HTTP address"}},
		},
		"export": {
			"folded": paths, "folded-offcpu": paths, "pprof": paths, "prometheus": paths, "trace": paths,
		},
		"report": {"html": paths},
	}
	// Flags whose command line differs from their command's: compare's
	// of --run mode go with two --run, not two records.
	// --scale goes without --conditions.
	aroundOf := map[string]string{"diagnose --scale": "diagnose --scale"}
	for _, f := range []string{"run", "repeat", "metric", "save-a", "save-b", "metric-lower"} {
		aroundOf["compare --"+f] = "compare --run"
	}
	// A flag's value whose error comes from a second flag given once too
	// (compare --run given once).
	solo := map[string]bool{"compare --run": true}

	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "perfsleuth")
		path = strings.TrimSpace(path)
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Name == "version" {
				return
			}
			name := path + " --" + f.Name
			var values []badValue
			if v, ok := byType[f.Value.Type()]; ok {
				values = append(values, v)
			}
			values = append(values, meaning[path][f.Name]...)
			if _, typed := byType[f.Value.Type()]; !typed && len(meaning[path][f.Name]) == 0 {
				t.Errorf("%s (%s) has no bad value to try: add one to meaning", name, f.Value.Type())
				return
			}
			key := path
			if k, ok := aroundOf[name]; ok {
				key = k
			}
			args, ok := around[key]
			if !ok {
				t.Errorf("%s: no valid arguments for %q in around", name, key)
				return
			}
			for _, v := range values {
				t.Run(name+"="+v.value, func(t *testing.T) {
					pre := slices.Clone(args[0])
					if solo[name] {
						pre = []string{"compare"}
					}
					flag := []string{"--" + f.Name, v.value}
					if f.Value.Type() == "bool" {
						flag = []string{"--" + f.Name + "=" + v.value}
					}
					line := oneError(t, run(t, work, append(append(pre, flag...), args[1]...)...))
					if !strings.Contains(line, v.want) {
						t.Errorf("error %q does not say %q", line, v.want)
					}
					if !strings.Contains(line, "--"+f.Name) && !strings.Contains(line, v.value) {
						t.Errorf("error %q names neither --%s nor %q", line, f.Name, v.value)
					}
					if l := listing(t, work); len(l) != 0 {
						t.Errorf("left behind in the working directory: %v", l)
					}
					if _, err := os.Stat("/nonexistent"); err == nil {
						t.Errorf("/nonexistent was made")
					}
				})
			}
		})
		for _, s := range c.Commands() {
			if !s.Hidden && s.Name() != "help" && s.Name() != "completion" {
				walk(s)
			}
		}
	}
	walk(cli.NewRoot(io.Discard, io.Discard))
	if l := listing(t, records); len(l) != 2 {
		t.Errorf("the records' directory changed: %v", l)
	}
}
