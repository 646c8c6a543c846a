package compare

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/sqlnorm"
)

// GroupSQL holds the statements' rows (both runs observed with --sql).
const GroupSQL = "sql statements"

// sqlMaxStatements is how many statements are compared: those that took
// the most time in either run, as the terminal lists them.
const sqlMaxStatements = 10

// sqlStatementSum is one statement's figures in one run, over its
// processes (a pid is not the same between runs; the text is).
type sqlStatementSum struct {
	text                 string
	execs, done          int64
	sec                  float64
	reads, writes, syncs int64
}

func sqlStatements(r *model.Run) map[string]*sqlStatementSum {
	if r.Storage == nil || r.Storage.SQLite == nil || r.Storage.SQLite.SQL == nil {
		return nil
	}
	out := map[string]*sqlStatementSum{}
	for _, s := range r.Storage.SQLite.SQL.Statements {
		m := out[s.Text]
		if m == nil {
			m = &sqlStatementSum{text: s.Text}
			out[s.Text] = m
		}
		m.execs += s.Execs
		m.done += s.Done
		m.sec += s.Sec
		m.reads += s.Reads
		m.writes += s.Writes
		m.syncs += s.Syncs
	}
	return out
}

// sqlRows compares the statements that took the most time in either run:
// how often each ran and what IO it made per unit of work, and its mean
// time per execution. A statement only one run made shows with 0 in the
// other.
func sqlRows(a, b *model.Run, wa, wb work) []Difference {
	sa, sb := sqlStatements(a), sqlStatements(b)
	if sa == nil || sb == nil {
		return nil
	}
	var texts []string
	for _, m := range []map[string]*sqlStatementSum{sa, sb} {
		top := make([]*sqlStatementSum, 0, len(m))
		for _, s := range m {
			top = append(top, s)
		}
		slices.SortFunc(top, func(x, y *sqlStatementSum) int { return cmp.Or(cmp.Compare(y.sec, x.sec), cmp.Compare(x.text, y.text)) })
		for _, s := range top[:min(len(top), sqlMaxStatements)] {
			if !slices.Contains(texts, s.text) {
				texts = append(texts, s.text)
			}
		}
	}
	var out []Difference
	zero := &sqlStatementSum{}
	for _, text := range texts {
		x, y := cmp.Or(sa[text], zero), cmp.Or(sb[text], zero)
		id := "sql." + textID(text)
		out = append(out, countRow(GroupSQL, id+".execs", "executions of "+quoted(text), float64(x.execs), float64(y.execs), wa, wb, countMinEvents, countRule)...)
		out = append(out, countRow(GroupSQL, id+".syncs", "syncs by "+quoted(text), float64(x.syncs), float64(y.syncs), wa, wb, countMinEvents, countRule)...)
		out = append(out, countRow(GroupSQL, id+".io", "reads and writes by "+quoted(text), float64(x.reads+x.writes), float64(y.reads+y.writes), wa, wb, countMinEvents, countRule)...)
		if x.done > 0 && y.done > 0 {
			out = append(out, latencyRow(GroupSQL, id+".time", "time of "+quoted(text)+" (mean)", x.sec/float64(x.done), y.sec/float64(y.done),
				x.done, y.done, float64(x.done)/wa.units, float64(y.done)/wb.units, wa, wb))
		}
	}
	return out
}

// textID is a statement's stable part of a row id: its text hashed, as
// the text itself may hold dots and spaces.
func textID(text string) string {
	h := fnv.New32a()
	h.Write([]byte(text))
	return fmt.Sprintf("%08x", h.Sum32())
}

// quoted is a statement's text in a row's name, cut to stay one line.
func quoted(text string) string {
	return "«" + sqlnorm.Cut(text, 60) + "»"
}
