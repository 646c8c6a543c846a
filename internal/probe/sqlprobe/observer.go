package sqlprobe

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/probe"
	"github.com/perfsleuth/perfsleuth/internal/sqlnorm"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// New returns the statement probe as a probe.Probe: with --sql it names the
// SQLite statement behind each SQLite file read, write and sync that
// storage sees.
func New() probe.Probe { return &observer{} }

type observer struct {
	p   *Probe
	res *Result
	err error
}

func (o *observer) Info() probe.Info {
	return probe.Info{Name: "sql", Needs: []string{"timeacct", "storage"}}
}

func (o *observer) Wanted(opts probe.Options) bool { return opts.SQL && !opts.NoEBPF }

// Calibrate does nothing: the cost is the uprobe traps, counted.
func (o *observer) Calibrate(probe.Options) {}

func (o *observer) Start(_ context.Context, s *probe.Session) error {
	// The maps timeacct and storage share, by name: probes do not import
	// each other (docs/design.md).
	p, err := Start(s.Roots, s.Shared(), s.Map("sql_threads"))
	if err != nil {
		return fmt.Errorf("no SQL statements: %w", err)
	}
	o.p = p
	return nil
}

func (o *observer) Stop() error {
	if o.p == nil {
		return nil
	}
	o.res, o.err = o.p.Stop()
	o.p = nil
	return o.err
}

// Contribute joins the statements to the SQLite file IO storage charged
// to them, into the record's SQLite section.
func (o *observer) Contribute(run *model.Run) {
	if o.err != nil {
		run.Warnings = append(run.Warnings, "the SQL statement probe failed: "+o.err.Error())
	}
	if o.res == nil || run.Storage == nil {
		return
	}
	if run.Storage.SQLite == nil {
		run.Storage.SQLite = &model.SQLiteIO{}
	}
	var fileCalls int64
	for _, f := range run.Storage.Files {
		fileCalls += f.Reads.Count + f.Writes.Count + f.Syncs
	}
	sq := run.Storage.SQLite
	sq.SQL = Join(o.res, sq.ByStatement, run.Storage.StatementCalls, fileCalls)
}

// Join makes the record's statements: the probe's, merged by normalised
// text per process, each with the SQLite file IO (io) and every file's
// calls (calls) charged to its ids; fileCalls is the workload's file
// calls, of which those made under a statement are calls_share.
func Join(res *Result, io map[uint32]*model.SQLStmtIO, calls map[uint32]*model.SQLCalls, fileCalls int64) *model.SQLStatements {
	out := &model.SQLStatements{UprobeHits: int64(res.Runs), OtherHits: int64(res.Others), Notes: slices.Clone(res.Notes)}
	for _, l := range res.Libraries {
		out.Libraries = append(out.Libraries, model.SQLLibrary{Path: l.Path, BuildID: l.BuildID, SQLOffset: l.SQLOffset, AutoCommitOffset: l.AutoCommitOffset})
	}
	type key struct {
		pid        int
		kind, text string
	}
	merged := map[key]*model.SQLStatement{}
	hists := map[key][]uint64{}
	texts := labels(res)
	var total, joined model.SQLStmtIO
	var under int64
	for _, s := range res.Statements {
		k := key{s.PID, s.Kind, label(s)}
		m := merged[k]
		if m == nil {
			m = &model.SQLStatement{PID: s.PID, Kind: s.Kind, Text: k.text}
			if s.Parent != 0 {
				m.NestedIn = cmp.Or(texts[s.Parent], "(a statement not kept)")
			}
			merged[k] = m
			hists[k] = make([]uint64, len(s.Hist))
		}
		m.Execs += int64(s.Execs)
		m.Done += int64(s.Done)
		m.Steps += int64(s.Steps)
		m.Autocommit += int64(s.Autocommit)
		m.Sec += s.Sec
		m.OffCPUExecs += int64(s.CatOff)
		if s.CatExecs > 0 {
			if m.Time == nil {
				m.Time = map[string]float64{}
			}
			m.TimedExecs += int64(s.CatExecs)
			m.TimedSec += float64(s.CatWall) / 1e9
			for i, ns := range s.CatNs {
				if ns > 0 {
					m.Time[model.Categories[i]] += float64(ns) / 1e9
				}
			}
		}
		for i, n := range s.LockWaits {
			if n == 0 {
				continue
			}
			j := slices.IndexFunc(m.LockWaits, func(w model.SQLLockWait) bool { return w.Type == LockTypes[i] })
			if j < 0 {
				m.LockWaits = append(m.LockWaits, model.SQLLockWait{Type: LockTypes[i]})
				j = len(m.LockWaits) - 1
			}
			m.LockWaits[j].Waits += int64(n)
			m.LockWaits[j].Sec += float64(s.LockNs[i]) / 1e9
		}
		for i, n := range s.Hist {
			hists[k][i] += n
		}
		if sio := io[s.ID]; sio != nil {
			addIO(&m.SQLStmtIO, sio)
			addIO(&joined, sio)
		}
		if c := calls[s.ID]; c != nil {
			addCalls(&m.Calls, c)
			under += c.Reads + c.Writes + c.Syncs
		}
	}
	out.FileCalls = fileCalls
	if fileCalls > 0 {
		out.CallsShare = min(float64(under)/float64(fileCalls), 1)
	}
	for id, sio := range io {
		addIO(&total, sio)
		if id == 0 {
			out.Unattributed = *sio
		}
	}
	for k, m := range merged {
		m.P50Sec, m.P99Sec = quantile(hists[k], 0.5), quantile(hists[k], 0.99)
		slices.SortFunc(m.LockWaits, func(a, b model.SQLLockWait) int { return cmp.Compare(b.Sec, a.Sec) })
		out.Statements = append(out.Statements, *m)
	}
	out.Transactions = transactions(res, texts)
	slices.SortFunc(out.Statements, func(a, b model.SQLStatement) int {
		return cmp.Or(cmp.Compare(b.Sec, a.Sec), cmp.Compare(b.Reads+b.Writes+b.Syncs, a.Reads+a.Writes+a.Syncs), cmp.Compare(a.Text, b.Text))
	})
	if calls := total.Reads + total.Writes + total.Syncs; calls > 0 {
		out.AttributedShare = float64(joined.Reads+joined.Writes+joined.Syncs) / float64(calls)
	}
	if bytes := total.ReadBytes + total.WriteBytes; bytes > 0 {
		out.AttributedBytesShare = float64(joined.ReadBytes+joined.WriteBytes) / float64(bytes)
	}
	if res.StmtsFull > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d executions of statements past the first %d distinct texts were not named", res.StmtsFull, maxStmts))
	}
	if res.NoOffset > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d executions of statements whose text the probe could not find (the library's statement layout was not decoded)", res.NoOffset))
	}
	if res.TxsFull > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d transactions past the first %d kinds (statement sequences) were not counted", res.TxsFull, maxTxs))
	}
	if res.TxUnended > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d transactions are not counted: their end was not seen (a statement left without a reset until the connection's next one)", res.TxUnended))
	}
	if res.NestDeep > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d executions of statements nested more than %d deep in functions ran as the statement they are nested in", res.NestDeep, maxNest))
	}
	if res.CatUnread > 0 {
		why := "begun on another thread, or on one the time accounting had not seen run"
		if res.CatOff > 0 {
			why = fmt.Sprintf("%d of them ran while the time accounting had their thread off the CPU (the kernel's sched_switch tracepoint left out its switch-in; docs/probes.md), the others %s", res.CatOff, why)
		}
		out.Notes = append(out.Notes, fmt.Sprintf("%d executions have no time by state (on CPU, blocked, ...): %s", res.CatUnread, why))
	}
	if res.Unread > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d statement texts could not be read from the workload's memory", res.Unread))
	}
	return out
}

// maxStmts is bpf/sqlstmt.h's SQ_MAX_STMTS, less the unused id 0.
const maxStmts = 4095

// maxTxs is bpf/sqlstmt.h's SQ_MAX_TXS.
const maxTxs = 1024

// maxNest is bpf/sqlstmt.h's SQ_PG_NEST.
const maxNest = 4

func addIO(dst, src *model.SQLStmtIO) {
	dst.Reads += src.Reads
	dst.Writes += src.Writes
	dst.Syncs += src.Syncs
	dst.ReadBytes += src.ReadBytes
	dst.WriteBytes += src.WriteBytes
	for _, p := range src.Pages {
		i := slices.IndexFunc(dst.Pages, func(q model.SQLitePages) bool { return q.Kind == p.Kind && q.Type == p.Type })
		if i < 0 {
			dst.Pages = append(dst.Pages, model.SQLitePages{Kind: p.Kind, Type: p.Type})
			i = len(dst.Pages) - 1
		}
		q := &dst.Pages[i]
		q.Reads += p.Reads
		q.Writes += p.Writes
		q.ReadBytes += p.ReadBytes
		q.WriteBytes += p.WriteBytes
	}
}

func addCalls(dst, src *model.SQLCalls) {
	dst.Reads += src.Reads
	dst.Writes += src.Writes
	dst.Syncs += src.Syncs
	dst.ReadBytes += src.ReadBytes
	dst.WriteBytes += src.WriteBytes
	dst.ReadSec += src.ReadSec
	dst.WriteSec += src.WriteSec
	dst.SyncSec += src.SyncSec
	dst.ReadMissPages += src.ReadMissPages
	dst.Faults += src.Faults
}

// quantile is the q-quantile of a log2 histogram of nanoseconds (slot i
// holds [2^i, 2^(i+1))), in seconds: the middle of its bucket, so within a
// factor of 1.5 either way. 0 for an empty one.
func quantile(h []uint64, q float64) float64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n-1)) + 1
	var seen uint64
	for i, c := range h {
		seen += c
		if seen >= rank {
			return 1.5 * float64(uint64(1)<<i) / 1e9
		}
	}
	return 0
}

// Check says whether the statement probe finds a SQLite library here.
func (o *observer) Check() sysinfo.Check {
	c := sysinfo.Check{Name: "sql_probe"}
	if os.Geteuid() != 0 {
		c.Status, c.Detail, c.Fix = sysinfo.StatusMissing, "not root: --sql needs uprobes", "run perfsleuth as root (sudo)"
		return c
	}
	libs, notes := Find(nil)
	if len(libs) == 0 {
		c.Status, c.Detail = sysinfo.StatusMissing, fmt.Sprintf("no system libsqlite3.so.0 (%v): --sql finds SQLite only in the libraries the workload maps", notes)
		return c
	}
	c.Status, c.Detail = sysinfo.StatusOK, fmt.Sprintf("--sql hooks %s", libs[0].Path)
	if libs[0].OffsetsNote != "" {
		c.Detail += " (" + libs[0].OffsetsNote + ": statements are counted, not named)"
	}
	return c
}

// label is a statement's key text: normalised, or the name of the
// pseudo-statement it is.
func label(s Statement) string {
	switch {
	case s.Kind == "internal":
		return "(SQLite's own statements: schema reads)"
	case s.Kind != "statement":
		return "(" + s.Kind + ")"
	}
	if text := sqlnorm.Normalize(s.Text, sqlnorm.MaxLen); text != "" {
		return text
	}
	return "(a statement whose text could not be read)"
}

// labels are the statements' key texts by id.
func labels(res *Result) map[uint32]string {
	texts := map[uint32]string{}
	for _, s := range res.Statements {
		texts[s.ID] = label(s)
	}
	return texts
}

// transactions merges the probe's kinds of transaction by their
// statements' normalised texts, across processes (a server's backends
// each run the same kinds), most time first.
func transactions(res *Result, texts map[uint32]string) []model.SQLTransaction {
	type acc struct {
		tx   model.SQLTransaction
		hist []uint64
		pids map[int]bool
	}
	merged := map[string]*acc{}
	var order []string
	for _, t := range res.Transactions {
		names := make([]string, len(t.IDs))
		for i, id := range t.IDs {
			names[i] = cmp.Or(texts[id], "(unnamed)")
		}
		k := fmt.Sprintf("%d\x00%s", t.Statements, strings.Join(names, "\x00"))
		a := merged[k]
		if a == nil {
			a = &acc{tx: model.SQLTransaction{Statements: names, StatementCount: t.Statements}, hist: make([]uint64, len(t.Hist)), pids: map[int]bool{}}
			merged[k] = a
			order = append(order, k)
		}
		a.tx.Count += int64(t.Count)
		a.tx.Sec += t.Sec
		a.tx.MaxSec = max(a.tx.MaxSec, t.MaxSec)
		a.tx.Syncs += int64(t.Syncs)
		a.tx.SyncSec += t.SyncSec
		a.pids[t.PID] = true
		for i, n := range t.Hist {
			a.hist[i] += n
		}
	}
	var out []model.SQLTransaction
	for _, k := range order {
		a := merged[k]
		a.tx.Processes = len(a.pids)
		// A bucket's middle can lie past the longest one seen.
		a.tx.P50Sec, a.tx.P99Sec = min(quantile(a.hist, 0.5), a.tx.MaxSec), min(quantile(a.hist, 0.99), a.tx.MaxSec)
		out = append(out, a.tx)
	}
	slices.SortFunc(out, func(a, b model.SQLTransaction) int {
		return cmp.Or(cmp.Compare(b.Sec, a.Sec), cmp.Compare(b.Count, a.Count), slices.Compare(a.Statements, b.Statements))
	})
	return out
}
