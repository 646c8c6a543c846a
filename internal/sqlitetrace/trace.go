// Package sqlitetrace maps the reads, writes and syncs of SQLite files that
// the storage probe reports one by one to what they touch: database pages
// by type and by table or index, WAL headers and frames (with the page each
// frame carries), journal headers and records; and it cuts them into
// transactions, each the sequence of writes and syncs it made.
//
// Database pages are typed by the flag byte the call moved when it is a
// b-tree page, otherwise (overflow, freelist, pointer map) by a parse of the
// database at the end of the window, which also names each page's owner:
// a page reused for another purpose during the window is named after what
// it was at the end.
package sqlitetrace

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/sqlitefile"
)

// Bounds on what is kept, whatever the workload does.
const (
	keepTx       = 20   // transactions kept step by step
	maxPatterns  = 1000 // distinct step sequences counted
	maxSteps     = 64   // steps kept per transaction
	maxFileState = 64   // SQLite files followed
)

type fileKey struct {
	dev string
	ino uint64
}

// opKey aggregates the operations on one part of a file.
type opKey struct {
	part string // db: "" (a page); WAL and journal: the part
	pgno uint32 // db page, or the page a WAL frame or journal record holds (0 unknown)
	flag string // the b-tree type the call moved, "" if none
}

type opStats struct {
	reads, writes, readBytes, writeBytes, seq, random int64
}

// typed is the page type of the operations k counts on a file of kind, as
// the tables show it (db: the b-tree page's type; a WAL frame: the type of
// the page it carries; else the part), and the table or index that owns
// the page ("" if none).
func (k opKey) typed(kind int, db *sqlitefile.DB) (typ, owner string) {
	if kind != KindDB && k.part != string(sqlitefile.WALPartFramePage) {
		return k.part, ""
	}
	pt, owner := pageType(db, k.pgno, k.flag)
	if kind == KindDB {
		return pt, owner
	}
	return "frame-page (" + pt + ")", owner
}

// addOps adds operations s to the page counts m.
func addOps(m *model.SQLitePages, s *opStats) {
	m.Reads += s.reads
	m.Writes += s.writes
	m.ReadBytes += s.readBytes
	m.WriteBytes += s.writeBytes
	m.Sequential += s.seq
	m.Random += s.random
}

// stmtOpKey is an opKey of one file kind, for a statement's operations.
type stmtOpKey struct {
	kind int
	op   opKey
}

// stmtState is the SQLite file IO charged to one statement (the events'
// StmtID).
type stmtState struct {
	syncs int64
	ops   map[stmtOpKey]*opStats
}

type fileState struct {
	key  fileKey
	kind int
	// f keeps the file open from its first event, so that it can be parsed
	// at the end even if it was deleted; nil if it could not be opened.
	f    *os.File
	path string
	ops  map[opKey]*opStats
	next int64 // where a sequential call would begin
	// A WAL's or a database's page size, from its header; a WAL's
	// frames, with the page each carries.
	pageSize int
	frames   map[int64]uint32
	// journal: the current header.
	jhdr *sqlitefile.JournalHeader
}

// step is one write or sync of a transaction: a label ("journal record",
// "wal frame", "sync db", ...) and, for database pages and the pages WAL
// frames carry, the page and its b-tree type when the call moved it.
type step struct {
	label string
	pgno  uint32
	flag  string
}

type txRecord struct {
	tid   int
	steps []step
}

type pattern struct {
	steps []step
	count int64
}

type txState struct {
	steps     []step
	endsAfter bool // a WAL commit frame's header was written: the tx ends with its page
	committed bool // and its page too: what follows is the commit's syncs, then the next tx
}

// Tracer collects the events of one run. Add may be called from one
// goroutine while another calls Finish once at the end.
type Tracer struct {
	mu    sync.Mutex
	files map[fileKey]*fileState
	tx    map[int]*txState
	txs   []txRecord
	// patterns counts the transactions per sequence of steps, pages
	// included; Finish names the pages and merges what reads the same.
	patterns map[string]*pattern
	lost     int64 // transactions beyond maxPatterns distinct sequences
	events   int64
	// states are the distinct files (files maps every inode seen to one);
	// skipped counts the events of files beyond maxFileState.
	states  []*fileState
	skipped int64
	keyBuf  []byte
	// stmts is the IO per SQL statement (Event.StmtID; 0: none named).
	stmts map[uint32]*stmtState
}

// New returns a tracer. It finds each file through the thread of its first
// event.
func New() *Tracer {
	return &Tracer{files: map[fileKey]*fileState{}, tx: map[int]*txState{}, patterns: map[string]*pattern{},
		stmts: map[uint32]*stmtState{}}
}

// Add takes one event.
func (t *Tracer) Add(ev Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events++
	k := fileKey{ev.Dev, ev.Ino}
	fs := t.files[k]
	if fs == nil {
		f, path := openByInode(ev.TID, k)
		// A rollback journal is a new file in every transaction, often
		// under a new inode: the same path is the same state.
		for _, old := range t.states {
			if path != "" && old.path == path && old.kind == ev.Kind {
				fs = old
				break
			}
		}
		switch {
		case fs != nil:
			if f != nil {
				if fs.f != nil {
					fs.f.Close()
				}
				fs.f = f
			}
		case len(t.states) >= maxFileState:
			if f != nil {
				f.Close()
			}
			t.skipped++
			return
		default:
			fs = &fileState{key: k, kind: ev.Kind, ops: map[opKey]*opStats{}, frames: map[int64]uint32{}, f: f, path: path}
			fs.readHeader()
			t.states = append(t.states, fs)
		}
		t.files[k] = fs
	}
	ss := t.stmts[ev.StmtID]
	if ss == nil {
		ss = &stmtState{ops: map[stmtOpKey]*opStats{}}
		t.stmts[ev.StmtID] = ss
	}
	if ev.Op == EvSync {
		ss.syncs++
		t.step(ev.TID, step{label: syncLabels[fs.kind]})
		return
	}
	key, label := fs.classify(ev)
	sk := stmtOpKey{fs.kind, key}
	so := ss.ops[sk]
	if so == nil {
		so = &opStats{}
		ss.ops[sk] = so
	}
	st := step{label: label}
	if fs.kind == KindDB || label == "wal frame-page" {
		st.pgno, st.flag = key.pgno, key.flag
	}
	s := fs.ops[key]
	if s == nil {
		s = &opStats{}
		fs.ops[key] = s
	}
	if ev.Off == fs.next {
		s.seq++
	} else {
		s.random++
	}
	fs.next = ev.Off + ev.Len
	if ev.Op == EvRead {
		s.reads++
		s.readBytes += ev.Len
		so.reads++
		so.readBytes += ev.Len
		return
	}
	s.writes++
	s.writeBytes += ev.Len
	so.writes++
	so.writeBytes += ev.Len
	switch label {
	case "journal record-page", "journal record-checksum":
		return // one step per record: its page number
	case "journal record-pgno":
		st.label = "journal record"
	}
	t.step(ev.TID, st)
}

// readHeader reads the header of a file that existed before the window,
// whose header write the probe did not see: a WAL's or a database's page
// size, a journal's sector and page size.
func (fs *fileState) readHeader() {
	if fs.f == nil {
		return
	}
	b := make([]byte, 32)
	if n, _ := fs.f.ReadAt(b, 0); n < len(b) {
		return
	}
	switch fs.kind {
	case KindWAL:
		if h, err := sqlitefile.ParseWALHeader(b); err == nil {
			fs.pageSize = h.PageSize
		}
	case KindJournal:
		if h, err := sqlitefile.ParseJournalHeader(b); err == nil && h.SectorSize > 0 && h.PageSize > 0 {
			fs.jhdr = &h
		}
	case KindDB:
		fs.pageSize = dbPageSize(Event{Head: b})
	}
}

// classify names what an event touched, and the step it is in a
// transaction.
func (fs *fileState) classify(ev Event) (opKey, string) {
	switch fs.kind {
	case KindWAL:
		if ev.Off == 0 && len(ev.Head) >= sqlitefile.WALHeaderSize {
			if h, err := sqlitefile.ParseWALHeader(ev.Head); err == nil {
				fs.pageSize = h.PageSize
				clear(fs.frames)
			}
		}
		if fs.pageSize == 0 {
			return opKey{part: "wal (page size unknown)"}, "wal"
		}
		part, frame := sqlitefile.WALPartAt(ev.Off, fs.pageSize)
		switch part {
		case sqlitefile.WALPartFrameHeader:
			if ev.Op == EvWrite && len(ev.Head) >= sqlitefile.WALFrameHeaderSize {
				if fh, err := sqlitefile.ParseFrameHeader(ev.Head); err == nil {
					fs.frames[frame] = fh.Page
					if fh.IsCommit() {
						return opKey{part: string(part), pgno: fh.Page}, "wal commit-frame-header"
					}
				}
			}
			return opKey{part: string(part), pgno: fs.frames[frame]}, "wal frame-header"
		case sqlitefile.WALPartFramePage:
			pg := fs.frames[frame]
			return opKey{part: string(part), pgno: pg, flag: flagType(ev, pg)}, "wal frame-page"
		}
		return opKey{part: string(part)}, "wal " + string(part)
	case KindJournal:
		if ev.Off == 0 && len(ev.Head) >= 28 && ev.Op == EvWrite {
			// SQLite writes the header with its magic zeroed and fills
			// it in once the records are synced: both map the records.
			if h, err := sqlitefile.ParseJournalHeader(ev.Head); err == nil && h.SectorSize > 0 && h.PageSize > 0 {
				fs.jhdr = &h
			} else if allZero(ev.Head) {
				return opKey{part: string(sqlitefile.JournalPartHeader)}, "journal header-zeroed"
			}
		}
		if ev.Off == 0 {
			return opKey{part: string(sqlitefile.JournalPartHeader)}, "journal header"
		}
		if fs.jhdr == nil || fs.jhdr.SectorSize <= 0 || fs.jhdr.PageSize <= 0 {
			return opKey{part: "journal (header not seen)"}, "journal"
		}
		part, _ := sqlitefile.JournalPartAt(ev.Off, *fs.jhdr)
		var pg uint32
		if part == sqlitefile.JournalPartPgno && len(ev.Head) >= 4 {
			pg = uint32(ev.Head[0])<<24 | uint32(ev.Head[1])<<16 | uint32(ev.Head[2])<<8 | uint32(ev.Head[3])
		}
		return opKey{part: string(part), pgno: pg}, "journal " + string(part)
	}
	pgno := uint32(0)
	if ps := dbPageSize(ev); ps > 0 {
		fs.pageSize = ps // the db's page size, from its header
	}
	if fs.pageSize > 0 && ev.Off >= 0 {
		pgno = uint32(ev.Off/int64(fs.pageSize)) + 1
	}
	return opKey{pgno: pgno, flag: flagType(ev, pgno)}, "db"
}

// dbPageSize reads the page size from a database header the call moved.
func dbPageSize(ev Event) int {
	if ev.Off != 0 || len(ev.Head) < 18 || string(ev.Head[:16]) != "SQLite format 3\x00" {
		return 0
	}
	ps := int(ev.Head[16])<<8 | int(ev.Head[17])
	if ps == 1 {
		ps = 65536
	}
	return ps
}

// flagType is the b-tree type of the page a call moved, from its flag byte.
func flagType(ev Event, pgno uint32) string {
	var flag byte
	switch {
	case pgno == 1 && ev.Has100:
		flag = ev.B100
	case pgno != 1 && len(ev.Head) > 0 && ev.Len >= 512:
		flag = ev.Head[0]
	default:
		return ""
	}
	if t := sqlitefile.TypeOfFlag(flag); t != sqlitefile.Unknown {
		return string(t)
	}
	return ""
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func kindName(kind int) string { return KindNames[kind] }

// syncLabels are the steps of syncs per kind ("sync db", ...), made once
// rather than per event.
var syncLabels = func() map[int]string {
	m := map[int]string{}
	for k, name := range KindNames {
		m[k] = "sync " + name
	}
	return m
}()

// step appends a write or sync to tid's transaction, and ends it where
// SQLite's commit ends: a new rollback-journal header begins the next one,
// and a WAL commit frame ends with its page.
func (t *Tracer) step(tid int, st step) {
	tx := t.tx[tid]
	if tx != nil && len(tx.steps) > 0 && (st.label == "journal header" && !afterJournalSync(tx) ||
		tx.committed && !strings.HasPrefix(st.label, "sync ")) {
		t.endTx(tid)
		tx = nil
	}
	if tx == nil {
		tx = &txState{}
		t.tx[tid] = tx
	}
	if len(tx.steps) < maxSteps {
		tx.steps = append(tx.steps, st)
	}
	if st.label == "wal commit-frame-header" {
		tx.endsAfter = true
	} else if tx.endsAfter && st.label == "wal frame-page" {
		tx.committed = true
	}
}

// afterJournalSync: a FULL-sync commit rewrites the journal header's record
// count after syncing the records; that is not a new transaction.
func afterJournalSync(tx *txState) bool {
	n := len(tx.steps)
	return n > 0 && tx.steps[n-1].label == "sync journal"
}

func (t *Tracer) endTx(tid int) {
	tx := t.tx[tid]
	delete(t.tx, tid)
	if tx == nil || len(tx.steps) == 0 {
		return
	}
	if len(t.txs) < keepTx {
		t.txs = append(t.txs, txRecord{tid, tx.steps})
	}
	// Built by hand: this runs once per transaction, tens of thousands of
	// times a second, on the CPUs the workload uses.
	b := t.keyBuf[:0]
	for _, s := range tx.steps {
		b = append(b, s.label...)
		b = append(b, '/')
		b = strconv.AppendUint(b, uint64(s.pgno), 10)
		b = append(b, '/')
		b = append(b, s.flag...)
		b = append(b, ';')
	}
	t.keyBuf = b
	switch p := t.patterns[string(b)]; { // no copy of b for the lookup
	case p != nil:
		p.count++
	case len(t.patterns) < maxPatterns:
		t.patterns[string(b)] = &pattern{steps: tx.steps, count: 1}
	default:
		t.lost++
	}
}

// render names a transaction's steps, with page numbers or without, runs
// of the same step folded ("journal record ×3").
func render(steps []step, db *sqlitefile.DB, pages bool) []string {
	var out []string
	last, n := "", 0
	flush := func() {
		if n == 1 {
			out = append(out, last)
		} else if n > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", last, n))
		}
	}
	for _, s := range steps {
		label := s.label
		if s.label == "db" || s.label == "wal frame-page" {
			typ, owner := pageType(db, s.pgno, s.flag)
			what := typ
			if owner != "" {
				what += " " + owner
			}
			if pages && s.pgno > 0 {
				what += fmt.Sprintf(" p%d", s.pgno)
			}
			if s.label == "db" {
				label = "db " + what
			} else {
				label = "wal frame (" + what + ")"
			}
		}
		if label == last {
			n++
			continue
		}
		flush()
		last, n = label, 1
	}
	flush()
	return out
}

// openByInode finds the file among the open files of tid (or of the
// workload) and opens it through /proc, which works for a deleted file too.
func openByInode(tid int, k fileKey) (*os.File, string) {
	dir := fmt.Sprintf("/proc/%d/fd", tid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, ""
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Ino != k.ino || fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)) != k.dev {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, ""
		}
		name, _ := os.Readlink(p)
		return f, name
	}
	return nil, ""
}

// Finish parses the databases, sums the operations up and closes the
// files. files names the files by inode (from the storage probe).
func (t *Tracer) Finish(files []model.FileIO) *model.SQLiteIO {
	t.mu.Lock()
	defer t.mu.Unlock()
	for tid := range t.tx {
		t.endTx(tid)
	}
	if len(t.states) == 0 {
		return nil
	}
	out := &model.SQLiteIO{Events: t.events}
	names := map[fileKey]string{}
	for _, f := range files {
		names[fileKey{f.Dev, f.Ino}] = f.Path
	}
	byType := map[[2]string]*model.SQLitePages{}
	byObj := map[string]*model.SQLitePages{}
	// The databases first: the WAL's frames carry their pages. A database
	// the window saw only through its WAL is opened by name to be parsed.
	var db *sqlitefile.DB
	var extra []*fileState
	for _, fs := range t.states {
		if fs.kind == KindWAL && fs.path != "" && !t.hasDB(strings.TrimSuffix(fs.path, "-wal")) {
			if f, err := os.Open(strings.TrimSuffix(fs.path, "-wal")); err == nil {
				extra = append(extra, &fileState{kind: KindDB, f: f, path: f.Name()})
			}
		}
	}
	for _, fs := range extra {
		if parsed, _ := parse(fs, t.walOf(fs)); parsed != nil {
			db = parsed
		}
		fs.f.Close()
	}
	states := slices.Clone(t.states)
	slices.SortStableFunc(states, func(a, b *fileState) int { return a.kind - b.kind })
	if t.skipped > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d events of files beyond the first %d SQLite files were not mapped", t.skipped, maxFileState))
	}
	for _, fs := range states {
		path := names[fs.key]
		if path == "" {
			path = fs.path
		}
		sf := model.SQLiteFile{Path: path, Kind: kindName(fs.kind)}
		if fs.kind == KindDB {
			if parsed, note := parse(fs, t.walOf(fs)); parsed != nil {
				db = parsed
				sf.PageSize, sf.Pages = db.PageSize, len(db.Pages)
			} else {
				out.Notes = append(out.Notes, path+": "+note)
			}
		}
		if fs.kind == KindWAL {
			sf.PageSize = fs.pageSize
		}
		if i := slices.IndexFunc(out.Files, func(f model.SQLiteFile) bool { return f.Path == sf.Path && f.Kind == sf.Kind }); i < 0 || path == "" {
			out.Files = append(out.Files, sf)
		}
		for ok, s := range fs.ops {
			typ, owner := ok.typed(fs.kind, db)
			bk := [2]string{sf.Kind, typ}
			if byType[bk] == nil {
				byType[bk] = &model.SQLitePages{Kind: sf.Kind, Type: typ}
			}
			addOps(byType[bk], s)
			if owner != "" {
				if byObj[owner] == nil {
					byObj[owner] = &model.SQLitePages{Object: owner}
				}
				addOps(byObj[owner], s)
			}
		}
	}
	out.ByStatement = t.statementIO(db)
	t.closeFiles()
	for _, v := range byType {
		out.ByType = append(out.ByType, *v)
	}
	slices.SortFunc(out.ByType, func(a, b model.SQLitePages) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	for _, v := range byObj {
		out.ByObject = append(out.ByObject, *v)
	}
	slices.SortFunc(out.ByObject, func(a, b model.SQLitePages) int {
		return int((b.Reads + b.Writes) - (a.Reads + a.Writes))
	})
	for _, tx := range t.txs {
		out.Transactions = append(out.Transactions, model.SQLiteTx{TID: tx.tid, Steps: render(tx.steps, db, true)})
	}
	merged := map[string]*model.TxPattern{}
	for _, p := range t.patterns {
		steps := render(p.steps, db, false)
		key := strings.Join(steps, "\x00")
		if merged[key] == nil {
			merged[key] = &model.TxPattern{Steps: steps}
		}
		merged[key].Count += p.count
	}
	for _, p := range merged {
		out.Patterns = append(out.Patterns, *p)
	}
	if t.lost > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d transactions not in the patterns: more than %d distinct sequences", t.lost, maxPatterns))
	}
	slices.SortFunc(out.Patterns, func(a, b model.TxPattern) int { return int(b.Count - a.Count) })
	if len(out.Patterns) > 10 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d distinct transaction patterns; the 10 most common are listed", len(out.Patterns)))
		out.Patterns = out.Patterns[:10]
	}
	return out
}

// Close releases the files kept open, when a run ends without Finish.
func (t *Tracer) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closeFiles()
}

func (t *Tracer) closeFiles() {
	for _, fs := range t.states {
		if fs.f != nil {
			fs.f.Close()
			fs.f = nil
		}
	}
}

// hasDB tells whether the database at path had events of its own.
func (t *Tracer) hasDB(path string) bool {
	for _, fs := range t.states {
		if fs.kind == KindDB && fs.path == path {
			return true
		}
	}
	return false
}

// walOf is the WAL file kept open beside the database, if any: the one in
// the same directory named after it.
func (t *Tracer) walOf(db *fileState) *os.File {
	for _, fs := range t.states {
		if fs.kind == KindWAL && fs.f != nil && db.path != "" && fs.path == db.path+"-wal" {
			return fs.f
		}
	}
	return nil
}

// parse maps the database kept open since its first event, with the
// committed frames of its WAL (if wal is not nil) applied.
func parse(fs *fileState, wal *os.File) (*sqlitefile.DB, string) {
	if fs.f == nil {
		return nil, "not parsed: the file could not be opened while the workload had it open; page types other than b-tree pages and the owners are unknown"
	}
	st, err := fs.f.Stat()
	if err != nil {
		return nil, "not parsed: " + err.Error()
	}
	var r io.ReaderAt = fs.f
	size := st.Size()
	if wal != nil {
		if o := overlay(fs.f, wal); o != nil {
			r, size = o, o.size
		}
	}
	db, err := sqlitefile.ParseDB(r, size)
	if err != nil {
		return nil, "not parsed: " + err.Error()
	}
	return db, ""
}

// pageType is a page's type (the flag byte moved, else the parse) and owner.
func pageType(db *sqlitefile.DB, pgno uint32, flag string) (typ, owner string) {
	typ = flag
	if db != nil && pgno >= 1 && int(pgno) <= len(db.Pages) {
		p := db.Pages[pgno-1]
		owner = p.Owner
		if typ == "" {
			typ = string(p.Type)
		}
	}
	if pgno == 0 {
		return "page unknown", ""
	}
	if typ == "" {
		typ = string(sqlitefile.Unknown)
	}
	if pgno == 1 {
		typ = "header+" + typ
	}
	return typ, owner
}

// walOverlay is a database as SQLite sees it with its WAL: the file, with
// the pages of the WAL's committed frames on top. Pages written in WAL
// mode and not yet checkpointed exist only in the WAL.
type walOverlay struct {
	db       io.ReaderAt
	pages    map[uint32]int64 // page -> offset of its latest committed frame's content
	wal      io.ReaderAt
	pageSize int
	size     int64
}

// overlay reads the WAL's valid frames (salts of its header, up to the last
// commit frame); nil when there is nothing to overlay.
func overlay(db *os.File, wal *os.File) *walOverlay {
	st, err := db.Stat()
	if err != nil {
		return nil
	}
	hb := make([]byte, sqlitefile.WALHeaderSize)
	if _, err := wal.ReadAt(hb, 0); err != nil {
		return nil
	}
	h, err := sqlitefile.ParseWALHeader(hb)
	if err != nil {
		return nil
	}
	o := &walOverlay{db: db, wal: wal, pageSize: h.PageSize, size: st.Size(), pages: map[uint32]int64{}}
	pending := map[uint32]int64{}
	fb := make([]byte, sqlitefile.WALFrameHeaderSize)
	frameLen := int64(sqlitefile.WALFrameHeaderSize + h.PageSize)
	for off := int64(sqlitefile.WALHeaderSize); ; off += frameLen {
		if _, err := wal.ReadAt(fb, off); err != nil {
			break
		}
		fh, err := sqlitefile.ParseFrameHeader(fb)
		if err != nil || fh.Salt1 != h.Salt1 || fh.Salt2 != h.Salt2 {
			break
		}
		pending[fh.Page] = off + sqlitefile.WALFrameHeaderSize
		if fh.IsCommit() {
			maps.Copy(o.pages, pending)
			clear(pending)
			o.size = int64(fh.CommitSize) * int64(h.PageSize)
		}
	}
	if len(o.pages) == 0 {
		return nil
	}
	return o
}

func (o *walOverlay) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		pos := off + int64(n)
		pgno := uint32(pos/int64(o.pageSize)) + 1
		within := pos % int64(o.pageSize)
		chunk := min(int64(len(b)-n), int64(o.pageSize)-within)
		var m int
		var err error
		if fo, ok := o.pages[pgno]; ok {
			m, err = o.wal.ReadAt(b[n:n+int(chunk)], fo+within)
		} else {
			m, err = o.db.ReadAt(b[n:n+int(chunk)], pos)
		}
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// statementIO is the IO charged to each statement, its pages typed as
// Finish types the files' (db: the b-tree page type; WAL frames: the type
// of the page they carry).
func (t *Tracer) statementIO(db *sqlitefile.DB) map[uint32]*model.SQLStmtIO {
	out := map[uint32]*model.SQLStmtIO{}
	for id, ss := range t.stmts {
		sio := &model.SQLStmtIO{Syncs: ss.syncs}
		pages := map[[2]string]*model.SQLitePages{}
		for k, s := range ss.ops {
			typ, _ := k.op.typed(k.kind, db)
			pk := [2]string{kindName(k.kind), typ}
			p := pages[pk]
			if p == nil {
				p = &model.SQLitePages{Kind: pk[0], Type: pk[1]}
				pages[pk] = p
			}
			addOps(p, s)
			sio.Reads += s.reads
			sio.Writes += s.writes
			sio.ReadBytes += s.readBytes
			sio.WriteBytes += s.writeBytes
		}
		for _, p := range pages {
			sio.Pages = append(sio.Pages, *p)
		}
		slices.SortFunc(sio.Pages, func(a, b model.SQLitePages) int {
			return cmp.Or(cmp.Compare(b.Reads+b.Writes, a.Reads+a.Writes), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Type, b.Type))
		})
		out[id] = sio
	}
	return out
}
