package analyze

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/units"
)

// indexMinWrites: 100 index page writes; fewer are a schema setup. At
// parity (index pages written as often as table pages, the field case of
// single-row inserts into a table with one index) the indexes double the
// page writes of every row.
const indexMinWrites = 100

func sqliteIndexWriteAmplification(run *model.Run) *model.Finding {
	if run.Storage == nil || run.Storage.SQLite == nil {
		return nil
	}
	q := run.Storage.SQLite
	var index, table, indexWAL int64
	for _, t := range q.ByType {
		typ := t.Type
		if t.Kind == "wal" {
			inner, ok := strings.CutPrefix(typ, "frame-page (")
			if !ok {
				continue
			}
			typ = strings.TrimSuffix(inner, ")")
		} else if t.Kind != "db" {
			continue
		}
		// Page 1 ("header+table-leaf") is written for the change counter,
		// not for rows, so it is not counted as a table page.
		switch typ {
		case "index-leaf", "index-interior":
			index += t.Writes
			if t.Kind == "wal" {
				indexWAL += t.Writes
			}
		case "table-leaf", "table-interior":
			table += t.Writes
		}
	}
	if index < indexMinWrites || index < table {
		return nil
	}
	ev := []string{fmt.Sprintf("index pages written %s times (%s of them as WAL frames), table pages %s times",
		units.FormatCount(index), units.FormatCount(indexWAL), units.FormatCount(table))}
	names := indexNames(q)
	objs := append([]model.SQLitePages(nil), q.ByObject...)
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].Writes > objs[j].Writes })
	var listed []string
	for _, o := range objs {
		if len(listed) == 3 || o.Writes == 0 {
			break
		}
		if names[o.Object] {
			listed = append(listed, fmt.Sprintf("%s %s writes (%s)", o.Object, units.FormatCount(o.Writes), units.FormatSize(o.WriteBytes)))
		}
	}
	if len(listed) > 0 {
		ev = append(ev, "indexes by page writes: "+strings.Join(listed, ", "))
	}
	ev = append(ev, "every index is a b-tree of its own that each insert, delete and update of an indexed column writes: drop indexes no query needs, and group rows into larger transactions so that each index page takes many entries per write")
	ratio := float64(index) / float64(max(table, 1))
	return &model.Finding{
		Severity: "info",
		Summary:  fmt.Sprintf("SQLite writes index pages %.1fx as often as table pages", ratio),
		Evidence: ev,
		// Parity: index pages written at least as often as table pages
		// (a table without writes counts as one, so the ratio is the
		// index writes, at least indexMinWrites).
		Test: &model.FindingTest{Name: "index page writes per table page write", Value: ratio, Op: ">=", Threshold: 1},
	}
}
