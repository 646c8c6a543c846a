package sqlite

import (
	"context"
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"runtime"
	"sync"
	"time"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/workload"
	"github.com/perfsleuth/perfsleuth/internal/workload/sqlite/capi"
)

// progressInterval is how often Run reports progress: often enough for a
// live display, rare enough to cost nothing (workload.Progress asks for at
// most a few calls per second).
const progressInterval = 250 * time.Millisecond

// Run executes the phases in order. Each phase runs Rows statements in
// transactions of TxSize (autocommit when 1) and records each transaction's
// latency. When ctx is cancelled it stops after the current statement,
// commits the open transaction (so the table holds exactly what the stats
// count) and returns the phases so far with a nil error. An SQLite error
// stops the run; the partial result is returned with it.
func (b *Bench) Run(ctx context.Context, progress workload.Progress) (*model.Result, error) {
	if b.conn == nil {
		return nil, errors.New("sqlite benchmark not prepared: call Prepare first")
	}
	if b.ran {
		// The first run left the table as its phases did: a second insert
		// would collide, a second delete find nothing.
		return nil, errors.New("sqlite benchmark already ran: Prepare a new one")
	}
	b.ran = true
	// One OS thread runs every statement, without yielding: the loop never
	// blocks in Go, and per-thread observation sees one benchmark thread
	// (reported in WorkerTIDs). Measured against the C loop (7 pairs, WAL +
	// NORMAL, 20,000 rows): locked without yields 0.954/0.974/0.908/0.976
	// (insert/update/select/delete) against 0.973/0.961/0.882/0.945 for an
	// unlocked loop that yielded every 5 ms; locked with yields was worst
	// (select 0.80: each yield hands the locked thread's P away and back).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res := &model.Result{SQLite: &model.SQLiteResult{}, WorkerTIDs: []int{unix.Gettid()}}
	b.done.Store(0)
	total := float64(b.cfg.Rows) * float64(len(b.cfg.Phases))
	if progress != nil {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			t := time.NewTicker(progressInterval)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					progress(float64(b.done.Load()) / total)
				case <-stop:
					return
				}
			}
		})
		defer func() {
			close(stop)
			wg.Wait()
			progress(float64(b.done.Load()) / total)
		}()
	}
	// One generator for the whole run, drawn phase after phase: the same
	// seed gives the same rows and key orders (and cloop.c's).
	r := &rng{x: uint64(b.cfg.Seed)}
	for _, phase := range b.cfg.Phases {
		if ctx.Err() != nil {
			break
		}
		st, err := b.runPhase(ctx, newGen(phase, b.cfg.Rows, r))
		res.SQLite.Phases = append(res.SQLite.Phases, st)
		res.DurationSec += st.DurationSec
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// runPhase runs one phase. The loop does only what a C loop would: one
// call per statement with the generated parameters, a check of the row
// count, the clock read once per transaction. Generating the next chunk of
// parameters is excluded from the phase's duration and from the latency of
// the transaction it interrupts.
func (b *Bench) runPhase(ctx context.Context, g *gen) (model.PhaseStats, error) {
	st := model.PhaseStats{Phase: g.phase}
	rec := workload.NewRecorder()
	stmt := b.stmts[g.phase]
	begin, commit := b.stmts["begin"], b.stmts["commit"]
	batched := b.cfg.TxSize > 1
	isSelect := g.phase == PhaseSelect
	// Cancellation is checked between statements, through a non-blocking
	// receive: a statement is one C call, not interrupted.
	cancelled := ctx.Done()
	n := g.rows
	g.next(0)
	chunkEnd := g.n

	var err error
	var failedID int64
	// excluded is generation time since t0; skipped is all time excluded
	// from the phase.
	var excluded, skipped time.Duration
	start := time.Now()
	t0 := start
	for k := 0; k < n; {
		if isDone(cancelled) {
			break
		}
		end := min(k+b.cfg.TxSize, n)
		if batched {
			if _, err = begin.Exec(nil, nil); err != nil {
				failedID = g.id(k)
				break
			}
		}
		stop := false
		for ; k < end && !stop; k++ {
			if k == chunkEnd {
				g0 := time.Now()
				g.next(k)
				chunkEnd = k + g.n
				excluded += time.Since(g0)
			}
			var r capi.Result
			r, err = stmt.Exec(g.args(k - g.from))
			if err == nil {
				err = checkOneRow(r, isSelect)
			}
			if err != nil {
				failedID = g.id(k)
				break
			}
			b.done.Add(1)
			if b.onStatement != nil {
				b.onStatement(g.phase, int64(k+1))
			}
			// Inside a transaction, stop at once and commit what is done:
			// a transaction of many statements can take long.
			stop = batched && isDone(cancelled)
		}
		if err == nil && batched {
			if _, err = commit.Exec(nil, nil); err != nil {
				failedID = g.id(k - 1)
			}
		}
		if err != nil {
			if batched {
				// Undo the failed transaction so that the table matches the
				// counts. SQLite may have rolled back already (SQLITE_FULL
				// does), so an error here adds nothing.
				b.stmts["rollback"].Exec(nil, nil)
			}
			break
		}
		t1 := time.Now()
		rec.Record((t1.Sub(t0) - excluded).Nanoseconds())
		t0, skipped, excluded = t1, skipped+excluded, 0
		st.Transactions++
		st.Statements = int64(k)
		if stop {
			break
		}
	}
	st.DurationSec = (t0.Sub(start) - skipped).Seconds()
	if st.DurationSec > 0 {
		st.TxPerSec = float64(st.Transactions) / st.DurationSec
	}
	st.Latency = rec.Summary()
	if cnt, cerr := b.count(); cerr == nil {
		st.RowsAfter = cnt
	} else if err == nil {
		err = cerr
	}
	if err != nil {
		return st, b.phaseError(g.phase, failedID, err)
	}
	return st, nil
}

// checkOneRow checks that an INSERT, UPDATE or DELETE changed exactly one
// row, or that the SELECT (by primary key) returned exactly one.
func checkOneRow(r capi.Result, isSelect bool) error {
	switch {
	case isSelect && r.Rows != 1:
		return fmt.Errorf("%w: found %d rows", errNotOneRow, r.Rows)
	case !isSelect && r.Changes != 1:
		return fmt.Errorf("%w: changed %d rows", errNotOneRow, r.Changes)
	}
	return nil
}

// isDone reports whether c is closed, without blocking; a nil c never is.
func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

var errNotOneRow = errors.New("statement did not affect exactly one row (is the table in the state the phases expect?)")

// count returns the table's row count, outside any timing.
func (b *Bench) count() (int64, error) {
	v, err := b.queryOne(sqlCount)
	if err != nil {
		return 0, fmt.Errorf("count rows: %w", err)
	}
	n, _ := v.(int64)
	return n, nil
}

// phaseError names the phase, the row and the database, and says what to
// do about the errors a user can act on.
func (b *Bench) phaseError(phase string, id int64, err error) error {
	var se *capi.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("sqlite %s phase on %s (id %d): %w", phase, b.dbPath, id, err)
	}
	// SQLite's errors name the database already.
	msg := fmt.Sprintf("sqlite %s phase (id %d)", phase, id)
	switch se.Primary() {
	case capi.CodeFull:
		return fmt.Errorf("%s: %w: the file system is full; free space, use fewer --rows or another --dir", msg, err)
	case capi.CodeIOErr:
		return fmt.Errorf("%s: %w: an IO error; check dmesg for device or file-system errors", msg, err)
	}
	return fmt.Errorf("%s: %w", msg, err)
}
