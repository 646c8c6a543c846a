package analyze

import (
	"fmt"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// SQLite journal overhead. sqliteMinTx: 100 transactions; fewer are a
// schema setup or one batch. journalBytesRatio: the journal or WAL wrote
// as many bytes as the database did: every changed page is written twice,
// which is what single-row transactions do (the field case of SQLite
// single-row inserts: a rollback journal writes the old copy of each page
// it changes; a WAL appends a new copy of a page each transaction that
// changes it). syncsPerTx: two or more syncs per transaction is the
// rollback journal's commit (journal, then database; synchronous=FULL
// syncs the journal twice); WAL with synchronous=NORMAL makes none.
const (
	sqliteMinTx       = 100
	journalBytesRatio = 1.0
	syncsPerTx        = 2.0
)

func sqliteJournalOverhead(run *model.Run) *model.Finding {
	if run.Storage == nil || run.Storage.SQLite == nil || len(run.Storage.SQLite.Patterns) == 0 {
		return nil
	}
	q := run.Storage.SQLite
	var txs, syncs int64
	for _, p := range q.Patterns {
		txs += p.Count
		syncs += p.Count * syncSteps(p.Steps)
	}
	if txs < sqliteMinTx {
		return nil
	}
	written := map[string]int64{}
	for _, t := range q.ByType {
		written[t.Kind] += t.WriteBytes
	}
	logBytes := written["journal"] + written["wal"]
	perTx := float64(syncs) / float64(txs)
	// The SQLite events see the syncs of SQLite's files; the time
	// accounting sees every sync call, the directory's that DELETE mode
	// makes after removing the journal too. Regression: "each SQLite
	// transaction makes 3.0 syncs" beside a sync table of 4 per
	// transaction.
	var others float64
	if ta := run.TimeAccounting; ta != nil {
		var all int64
		for _, sc := range ta.Syncs {
			all += sc.Count
		}
		if all > syncs {
			others = float64(all-syncs) / float64(txs)
		}
	}
	// Without database writes (a WAL not checkpointed in the window) the
	// log has nothing to be compared with.
	byBytes := written["db"] > 0 && float64(logBytes) >= journalBytesRatio*float64(written["db"])
	bySyncs := perTx >= syncsPerTx
	if !byBytes && !bySyncs {
		return nil
	}
	top := q.Patterns[0]
	for _, p := range q.Patterns {
		if p.Count > top.Count {
			top = p
		}
	}
	var kinds []string
	for _, k := range []string{"db", "journal", "wal"} {
		if b, ok := written[k]; ok {
			kinds = append(kinds, k+" "+units.FormatSize(b))
		}
	}
	syncWords := fmt.Sprintf("%.1f syncs per transaction on average", perTx)
	if others >= 0.05 {
		syncWords = fmt.Sprintf("%.1f syncs per transaction on average: %.1f of SQLite's files, %.1f of other files (the directory DELETE mode syncs after removing the journal is one)",
			perTx+others, perTx, others)
	}
	ev := []string{
		fmt.Sprintf("most common transaction (%s of %s): %s", units.FormatCount(top.Count), units.FormatCount(txs), strings.Join(top.Steps, " → ")),
		syncWords,
	}
	if len(kinds) > 0 {
		ev = append(ev, "bytes written: "+strings.Join(kinds, ", "))
	}
	f := &model.Finding{Severity: "info", Summary: "the journal or WAL writes as many bytes as the database", Evidence: ev}
	if byBytes {
		f.Test = &model.FindingTest{Name: "journal and WAL bytes written per database byte written",
			Value: float64(logBytes) / float64(written["db"]), Op: ">=", Threshold: journalBytesRatio}
	}
	if bySyncs {
		f.Summary = fmt.Sprintf("each SQLite transaction makes %.1f syncs", perTx+others)
		f.Test = &model.FindingTest{Name: "syncs of SQLite's files per transaction", Value: perTx, Op: ">=", Threshold: syncsPerTx}
		// A warning when the syncs cost a material share of the time.
		// Where the accounting cannot tell sync waits apart (the /proc
		// fallback) their cost is unknown, and so is whether it matters.
		if ta := run.TimeAccounting; attributesStorage(ta) {
			sh := share(ta, model.CatStorageSync)
			f.Share = &sh
			if sh >= materialShare {
				f.Severity = "warning"
			}
		} else {
			f.Evidence = append(f.Evidence, "what the syncs cost is not known: this accounting cannot tell sync waits apart (eBPF can)")
		}
	}
	f.Evidence = append(f.Evidence, "the log costs as much as the data: group rows into larger transactions; journal_mode=WAL with synchronous=NORMAL syncs only at checkpoints")
	return f
}
