//go:build amd64

package sqlprobe

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/perfsleuth/perfsleuth/internal/probe"
)

// Probe is the attached statement probe. Stop it to read the result.
type Probe struct {
	objs sqlstmtObjects
	// coll is what the objects were assigned from, to Release.
	coll  *ebpf.Collection
	links []link.Link
	res   Result
}

// hooks are the programs and the functions they enter.
func (p *Probe) hooks() map[string]*ebpf.Program {
	return map[string]*ebpf.Program{
		"sqlite3_step": p.objs.SqStep, "sqlite3_reset": p.objs.SqReset, "sqlite3_finalize": p.objs.SqFinalize,
		"sqlite3_prepare": p.objs.SqPrepare, "sqlite3_prepare_v2": p.objs.SqPrepare, "sqlite3_prepare_v3": p.objs.SqPrepare,
		"sqlite3_wal_checkpoint_v2": p.objs.SqCheckpoint, "sqlite3_close": p.objs.SqClose, "sqlite3_close_v2": p.objs.SqClose,
	}
}

// Start finds the SQLite libraries of the processes pids (and the
// system's), and attaches to them. tracked is timeacct's map of the
// workload's processes and times its per-thread accounting (each
// execution's time by category is read from it); threads is storage's
// sql_threads map, which its SQLite file events read. With no library
// found it fails with a note of why.
func Start(pids []int, shared probe.Shared, threads *ebpf.Map) (_ *Probe, err error) {
	if !shared.Complete() || threads == nil {
		return nil, errors.New("sql: needs the time-accounting probe's tracked and threads maps and storage's sql_threads")
	}
	libs, notes := Find(pids)
	if len(libs) == 0 {
		return nil, fmt.Errorf("sql: no SQLite library or PostgreSQL server found (no libsqlite3.so.0 in ldconfig's cache, none mapped by the workload; for PostgreSQL give -p the postmaster)%s", joinedNotes(notes))
	}
	p := &Probe{res: Result{Libraries: libs, Notes: notes}}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	// One object, so one pair of offsets: the first SQLite library's
	// that decoded decide. A library of another build (other offsets) is
	// not attached, and a note says so.
	sqlOff, acOff := int64(-1), int64(-1)
	for _, l := range libs {
		if l.Engine == EngineSQLite && l.SQLOffset >= 0 {
			sqlOff, acOff = l.SQLOffset, l.AutoCommitOffset
			break
		}
	}
	spec, err := loadSqlstmt()
	if err != nil {
		return nil, fmt.Errorf("load sql spec: %w", err)
	}
	if err := spec.Variables["sql_off"].Set(sqlOff); err != nil {
		return nil, fmt.Errorf("sql: set sql_off: %w", err)
	}
	if err := spec.Variables["autocommit_off"].Set(acOff); err != nil {
		return nil, fmt.Errorf("sql: set autocommit_off: %w", err)
	}
	coll, err := probe.NewCollection("sql", spec, ebpf.CollectionOptions{
		MapReplacements: sqlReplacements(spec, shared, threads),
	})
	if err != nil {
		return nil, err
	}
	defer coll.Close()
	p.coll = coll
	if err := coll.Assign(&p.objs); err != nil {
		return nil, fmt.Errorf("load sql: %w", err)
	}
	for _, l := range libs {
		if l.Engine == EnginePostgres {
			ex, err := link.OpenExecutable(l.Path)
			if err != nil {
				return nil, fmt.Errorf("sql: open %s: %w", l.Path, err)
			}
			lk, err := ex.Uprobe(pgActivity, p.objs.PgActivity, &link.UprobeOptions{Address: l.FileOffsets[pgActivity]})
			if err != nil {
				return nil, fmt.Errorf("sql: attach %s in %s: %w", pgActivity, l.Path, err)
			}
			p.links = append(p.links, lk)
			start, okStart := l.FileOffsets[pgExecStart]
			end, okEnd := l.FileOffsets[pgExecEnd]
			if okStart && okEnd {
				for _, h := range []struct {
					sym  string
					prog *ebpf.Program
					off  uint64
				}{{pgExecStart, p.objs.PgExecStart, start}, {pgExecEnd, p.objs.PgExecEnd, end}} {
					lk, err := ex.Uprobe(h.sym, h.prog, &link.UprobeOptions{Address: h.off})
					if err != nil {
						return nil, fmt.Errorf("sql: attach %s in %s: %w", h.sym, l.Path, err)
					}
					p.links = append(p.links, lk)
				}
			} else {
				p.res.Notes = append(p.res.Notes, fmt.Sprintf("%s: no %s and %s symbols: statements nested in functions are not named (their IO is the calling statement's)", l.Path, pgExecStart, pgExecEnd))
			}
			off, ok := l.FileOffsets[pgLockSleep]
			if !ok {
				p.res.Notes = append(p.res.Notes, fmt.Sprintf("%s: no %s symbol: the statements' lock waits are not named (they show as sleep)", l.Path, pgLockSleep))
				continue
			}
			in, err := ex.Uprobe(pgLockSleep, p.objs.PgLockSleep, &link.UprobeOptions{Address: off})
			if err != nil {
				return nil, fmt.Errorf("sql: attach %s in %s: %w", pgLockSleep, l.Path, err)
			}
			p.links = append(p.links, in)
			out, err := ex.Uretprobe(pgLockSleep, p.objs.PgLockWoke, &link.UprobeOptions{Address: off})
			if err != nil {
				return nil, fmt.Errorf("sql: attach the return of %s in %s: %w", pgLockSleep, l.Path, err)
			}
			p.links = append(p.links, out)
			continue
		}
		if l.SQLOffset != sqlOff || l.AutoCommitOffset != acOff {
			p.res.Notes = append(p.res.Notes, fmt.Sprintf("%s: another SQLite build (statement offsets %d, %d against %d, %d): its statements are not named", l.Path, l.SQLOffset, l.AutoCommitOffset, sqlOff, acOff))
			continue
		}
		if l.OffsetsNote != "" {
			p.res.Notes = append(p.res.Notes, l.Path+": "+l.OffsetsNote)
		}
		ex, err := link.OpenExecutable(l.Path)
		if err != nil {
			return nil, fmt.Errorf("sql: open %s: %w", l.Path, err)
		}
		for sym, prog := range p.hooks() {
			off, ok := l.FileOffsets[sym]
			if !ok {
				continue
			}
			// By the file offset Inspect found (from the dynamic symbols
			// or the full table): the symbol lookup of OpenExecutable
			// would read both again.
			lk, err := ex.Uprobe(sym, prog, &link.UprobeOptions{Address: off})
			if err != nil {
				return nil, fmt.Errorf("sql: attach %s in %s: %w", sym, l.Path, err)
			}
			p.links = append(p.links, lk)
		}
	}
	return p, nil
}

func joinedNotes(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return ": " + fmt.Sprint(notes)
}

func (p *Probe) close() {
	probe.CloseLinks(p.links)
	p.links = nil
	p.objs.Close()
	probe.Release(p.coll)
}

// Stop detaches the probe and returns the statements it saw.
func (p *Probe) Stop() (*Result, error) {
	err := probe.CloseLinks(p.links)
	p.links = nil
	// Released once read: a kept collection is emptied for its next use.
	defer probe.Release(p.coll)
	defer p.objs.Close()
	res := p.res
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("sql: detach: %w", err))
	}
	var per []sqlstmtSqCounters
	if err := p.objs.Counters.Lookup(uint32(0), &per); err != nil {
		errs = append(errs, fmt.Errorf("sql: map counters: %w", err))
	}
	for _, c := range per {
		res.Runs += c.Runs
		res.Others += c.Others
		res.StmtsFull += c.StmtsFull
		res.Unread += c.Unread
		res.NoOffset += c.NoOffset
		res.CatUnread += c.CatUnread
		res.CatOff += c.CatOff
		res.TxsFull += c.TxsFull
		res.TxUnended += c.TxUnended
		res.NestDeep += c.NestDeep
	}
	var id uint32
	var s sqlstmtSqStmt
	it := p.objs.Stmts.Iterate()
	for it.Next(&id, &s) {
		if s.Tgid == 0 || s.Execs == 0 {
			continue // never given, or lost a race for its text
		}
		st := Statement{ID: id, PID: int(s.Tgid), Text: text(s.Text[:], s.TextLen), Truncated: s.Truncated != 0,
			Execs: s.Execs, Done: s.Done, Steps: s.Steps, Autocommit: s.Autocommit, Sec: float64(s.Ns) / 1e9,
			Hist: append([]uint64(nil), s.Slots[:]...), CatExecs: s.CatExecs, CatNs: s.CatNs, CatWall: s.CatWall, CatOff: s.CatOff, LockWaits: s.LockWaits, LockNs: s.LockNs, Parent: s.Parent}
		if int(s.Kind) < len(KindNames) {
			st.Kind = KindNames[s.Kind]
		}
		res.Statements = append(res.Statements, st)
	}
	if err := it.Err(); err != nil {
		errs = append(errs, fmt.Errorf("sql: map stmts: %w", err))
	}
	var tk sqlstmtSqTxKey
	var tx sqlstmtSqTx
	tit := p.objs.Txs.Iterate()
	for tit.Next(&tk, &tx) {
		if tx.Count == 0 {
			continue
		}
		ids := append([]uint32(nil), tk.Ids[:min(int(tk.N), len(tk.Ids))]...)
		res.Transactions = append(res.Transactions, Transaction{PID: int(tk.Tgid), Statements: int(tk.N), IDs: ids,
			Count: tx.Count, Sec: float64(tx.Ns) / 1e9, MaxSec: float64(tx.MaxNs) / 1e9,
			Syncs: tx.Syncs, SyncSec: float64(tx.SyncNs) / 1e9, Hist: append([]uint64(nil), tx.Slots[:]...)})
	}
	if err := tit.Err(); err != nil {
		errs = append(errs, fmt.Errorf("sql: map txs: %w", err))
	}
	return &res, errors.Join(errs...)
}

func text(b []int8, n uint32) string {
	n = min(n, uint32(len(b)))
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(b[i])
	}
	return string(out)
}

// sqlReplacements are the maps put in place at load: the time
// accounting's, and storage's map of each thread's SQLite execution.
func sqlReplacements(spec *ebpf.CollectionSpec, shared probe.Shared, threads *ebpf.Map) map[string]*ebpf.Map {
	r := shared.Replacements(spec)
	if threads != nil {
		r["sql_threads"] = threads
	}
	return r
}
