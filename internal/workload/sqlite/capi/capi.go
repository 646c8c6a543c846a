// Package capi is a small cgo binding of the system's libsqlite3, made for
// the sqlite benchmark's timed loop: one cgo call per statement execution
// binds every parameter, steps to the end (reading every column of every
// row), resets and clears the bindings. A general driver (database/sql,
// mattn/go-sqlite3) makes about ten cgo calls per statement and allocates per
// string; that alone held the benchmark below 0.9 of a plain C loop.
//
// It links the system library (-lsqlite3), not a bundled amalgamation, so the
// benchmark runs the SQLite that the distribution's programs run, compiled as
// the distribution compiles it: Debian's and Android's builds sync with
// fdatasync(2) (HAVE_FDATASYNC), which an amalgamation compiled without that
// define replaces with fsync(2). Building needs the library's development
// files (Debian: libsqlite3-dev).
//
// A Conn is not safe for concurrent use: it is opened SQLITE_OPEN_NOMUTEX, so
// SQLite takes no lock on each call, and only one goroutine may use it (and
// its statements) at a time.
package capi

/*
#cgo LDFLAGS: -lsqlite3 -lm
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

// The parameter kinds of capi.Kind.
enum { ps_int = 1, ps_text = 2 };

// ps_result is what one ps_exec reports. It holds no pointers, so Go can
// pass the address of one inside a Stmt.
typedef struct {
	int rc;         // SQLITE_DONE, an SQLite error code, or ps_bad_text
	int errcode;    // sqlite3_extended_errcode when rc is an error
	long long changes;
	long long rows;
	char msg[256];  // sqlite3_errmsg when rc is an error
} ps_result;

// ps_bad_text is ps_exec's own result code, negative unlike SQLite's: the
// text lengths run past the text buffer.
enum { ps_bad_text = -1 };

// ps_read_row reads every column of the current row, each by its type,
// as benchmarks/sqlite/cloop.c does: SQLite converts nothing, but it has to
// find and decode each value.
static long long ps_read_row(sqlite3_stmt *s)
{
	long long sum = 0;
	int n = sqlite3_data_count(s);
	for (int c = 0; c < n; c++) {
		switch (sqlite3_column_type(s, c)) {
		case SQLITE_INTEGER:
			sum += sqlite3_column_int64(s, c);
			break;
		case SQLITE_FLOAT:
			sum += (long long)sqlite3_column_double(s, c);
			break;
		case SQLITE_TEXT: {
			const unsigned char *t = sqlite3_column_text(s, c);
			sum += (t ? t[0] : 0) + sqlite3_column_bytes(s, c);
			break;
		}
		case SQLITE_BLOB:
			sum += (sqlite3_column_blob(s, c) != 0) + sqlite3_column_bytes(s, c);
			break;
		}
	}
	return sum;
}

// ps_sink keeps the values read alive, so no compiler can drop the reads.
static volatile long long ps_sink;

// ps_exec runs s once: it binds the n parameters (an ps_int parameter i is
// vals[i]; a ps_text parameter is the next vals[i] bytes of text, bound
// SQLITE_STATIC: valid because s is reset and its bindings cleared before
// returning), steps until the statement is done, reading every row, and
// resets it. One call from Go per execution, however many parameters.
static void ps_exec(sqlite3_stmt *s, int n, const unsigned char *kinds, const long long *vals,
		    const char *text, long long text_len, ps_result *out)
{
	static const char empty[1];
	int rc = SQLITE_OK;
	long long off = 0, rows = 0, sum = 0;
	for (int i = 0; i < n && rc == SQLITE_OK; i++) {
		if (kinds[i] == ps_int) {
			rc = sqlite3_bind_int64(s, i + 1, vals[i]);
			continue;
		}
		if (vals[i] < 0 || vals[i] > text_len - off || vals[i] > 0x7fffffff) {
			rc = ps_bad_text;
			break;
		}
		rc = sqlite3_bind_text(s, i + 1, text ? text + off : empty, (int)vals[i], SQLITE_STATIC);
		off += vals[i];
	}
	if (rc == SQLITE_OK) {
		while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			rows++;
			sum += ps_read_row(s);
		}
	}
	ps_sink = sum;
	sqlite3 *db = sqlite3_db_handle(s);
	out->rc = rc;
	out->changes = sqlite3_changes(db);
	out->rows = rows;
	if (rc != SQLITE_DONE && rc != ps_bad_text) {
		// Before the reset, which keeps the error but may reword it.
		out->errcode = sqlite3_extended_errcode(db);
		strncpy(out->msg, sqlite3_errmsg(db), sizeof out->msg - 1);
		out->msg[sizeof out->msg - 1] = 0;
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
}

// ps_open opens path read-write, creating it, without SQLite's per-connection
// mutex (the Go side never shares a Conn between goroutines).
static int ps_open(const char *path, sqlite3 **db)
{
	return sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, 0);
}

static int ps_prepare(sqlite3 *db, const char *sql, int n, sqlite3_stmt **s, const char **tail)
{
	return sqlite3_prepare_v2(db, sql, n, s, tail);
}

static const char *ps_header_version(void) { return SQLITE_VERSION; }
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// Primary result codes a caller may want to tell apart
// (https://www.sqlite.org/rescode.html).
const (
	CodeIOErr = int(C.SQLITE_IOERR)
	CodeFull  = int(C.SQLITE_FULL)
)

// Kind is how a statement parameter is bound.
type Kind uint8

const (
	// Int is bound with sqlite3_bind_int64.
	Int Kind = C.ps_int
	// Text is bound with sqlite3_bind_text, SQLITE_STATIC: no copy.
	Text Kind = C.ps_text
)

// Error is an SQLite error, named after the operation and the database.
type Error struct {
	Op   string // e.g. `exec "PRAGMA page_size = 4096"`
	Path string // the database file
	// Code is the extended result code; Code&0xff is the primary one.
	Code int
	Msg  string // sqlite3_errmsg
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s on %s: %s (sqlite result code %d)", e.Op, e.Path, e.Msg, e.Code)
}

// Primary is the primary result code, e.g. CodeFull for SQLITE_FULL.
func (e *Error) Primary() int { return e.Code & 0xff }

// Version is the SQLite library's version, e.g. "3.40.1".
func Version() string { return C.GoString(C.sqlite3_libversion()) }

// headerVersion is the SQLITE_VERSION of the sqlite3.h this was compiled with.
func headerVersion() string { return C.GoString(C.ps_header_version()) }

// Conn is an open database connection.
type Conn struct {
	db    *C.sqlite3
	path  string
	stmts map[*Stmt]struct{} // finalized by Close
}

// Open opens (creating it if needed) the database file path, taken as a
// file name, never as a URI.
func Open(path string) (*Conn, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return nil, fmt.Errorf("open %q: the path holds a NUL byte", path)
	}
	name := path
	if strings.HasPrefix(name, "file:") {
		// Builds with SQLITE_USE_URI (Debian's) would parse it as a URI.
		name = "./" + name
	}
	cpath := C.CString(name)
	defer C.free(unsafe.Pointer(cpath))
	var db *C.sqlite3
	rc := C.ps_open(cpath, &db)
	c := &Conn{db: db, path: path, stmts: map[*Stmt]struct{}{}}
	if rc != C.SQLITE_OK {
		err := c.errorf(rc, "open")
		if db != nil {
			C.sqlite3_close(db)
		}
		return nil, err
	}
	return c, nil
}

// Path is the database file as given to Open.
func (c *Conn) Path() string { return c.path }

// errorf builds an Error for result code rc (used when the connection has
// no message of its own, as after a failed open without a handle).
func (c *Conn) errorf(rc C.int, op string) error {
	if c.db == nil {
		return &Error{Op: op, Path: c.path, Code: int(rc), Msg: C.GoString(C.sqlite3_errstr(rc))}
	}
	return &Error{Op: op, Path: c.path, Code: int(C.sqlite3_extended_errcode(c.db)), Msg: C.GoString(C.sqlite3_errmsg(c.db))}
}

var errClosed = errors.New("database connection is closed")

// Close finalizes the connection's statements and closes it. It is safe to
// call more than once.
func (c *Conn) Close() error {
	if c.db == nil {
		return nil
	}
	for s := range c.stmts {
		s.Close()
	}
	if rc := C.sqlite3_close(c.db); rc != C.SQLITE_OK {
		return c.errorf(rc, "close")
	}
	c.db = nil
	return nil
}

// Exec runs sql, which may hold several statements, with sqlite3_exec and
// discards any rows.
func (c *Conn) Exec(sql string) error {
	if c.db == nil {
		return errClosed
	}
	csql := C.CString(sql)
	defer C.free(unsafe.Pointer(csql))
	if rc := C.sqlite3_exec(c.db, csql, nil, nil, nil); rc != C.SQLITE_OK {
		return c.errorf(rc, fmt.Sprintf("exec %q", sql))
	}
	return nil
}

// Query runs one statement and returns its rows, each value an int64,
// float64, string, []byte or nil. It is for settings and checks, not for
// the timed loop: it prepares the statement and allocates every value.
func (c *Conn) Query(sql string) ([][]any, error) {
	if c.db == nil {
		return nil, errClosed
	}
	s, err := c.prepare(sql)
	if err != nil {
		return nil, err
	}
	defer C.sqlite3_finalize(s)
	var out [][]any
	for {
		rc := C.sqlite3_step(s)
		if rc == C.SQLITE_DONE {
			return out, nil
		}
		if rc != C.SQLITE_ROW {
			return out, c.errorf(rc, fmt.Sprintf("query %q", sql))
		}
		row := make([]any, C.sqlite3_data_count(s))
		for i := range row {
			ci := C.int(i)
			switch C.sqlite3_column_type(s, ci) {
			case C.SQLITE_INTEGER:
				row[i] = int64(C.sqlite3_column_int64(s, ci))
			case C.SQLITE_FLOAT:
				row[i] = float64(C.sqlite3_column_double(s, ci))
			case C.SQLITE_TEXT:
				p := unsafe.Pointer(C.sqlite3_column_text(s, ci))
				row[i] = C.GoStringN((*C.char)(p), C.sqlite3_column_bytes(s, ci))
			case C.SQLITE_BLOB:
				p := C.sqlite3_column_blob(s, ci)
				row[i] = C.GoBytes(p, C.sqlite3_column_bytes(s, ci))
			}
		}
		out = append(out, row)
	}
}

// AutoCommit reports whether no transaction is open (sqlite3_get_autocommit).
func (c *Conn) AutoCommit() bool {
	return c.db != nil && C.sqlite3_get_autocommit(c.db) != 0
}

// prepare compiles the one statement sql; trailing text other than spaces
// and semicolons is an error, so that nothing is silently left out.
func (c *Conn) prepare(sql string) (*C.sqlite3_stmt, error) {
	csql := C.CString(sql)
	defer C.free(unsafe.Pointer(csql))
	var s *C.sqlite3_stmt
	var tail *C.char
	if rc := C.ps_prepare(c.db, csql, C.int(len(sql)), &s, &tail); rc != C.SQLITE_OK {
		return nil, c.errorf(rc, fmt.Sprintf("prepare %q", sql))
	}
	if s == nil {
		return nil, &Error{Op: fmt.Sprintf("prepare %q", sql), Path: c.path, Code: int(C.SQLITE_MISUSE), Msg: "no statement"}
	}
	rest := sql[uintptr(unsafe.Pointer(tail))-uintptr(unsafe.Pointer(csql)):]
	if strings.Trim(rest, " \t\n;") != "" {
		C.sqlite3_finalize(s)
		return nil, &Error{Op: fmt.Sprintf("prepare %q", sql), Path: c.path, Code: int(C.SQLITE_MISUSE), Msg: "more than one statement"}
	}
	return s, nil
}

// Stmt is a prepared statement whose parameters have fixed kinds.
type Stmt struct {
	conn  *Conn
	s     *C.sqlite3_stmt
	sql   string
	kinds []C.uchar
	res   C.ps_result
}

// Result is what one execution did.
type Result struct {
	// Rows is the number of rows the statement returned (all were read).
	Rows int64
	// Changes is sqlite3_changes: the rows the last INSERT, UPDATE or
	// DELETE on the connection changed (for another statement, the last
	// one's count).
	Changes int64
}

// Prepare compiles sql, one statement whose parameters (?, in order) are
// bound as kinds say; there must be one kind per parameter.
func (c *Conn) Prepare(sql string, kinds ...Kind) (*Stmt, error) {
	if c.db == nil {
		return nil, errClosed
	}
	s, err := c.prepare(sql)
	if err != nil {
		return nil, err
	}
	if n := int(C.sqlite3_bind_parameter_count(s)); n != len(kinds) {
		C.sqlite3_finalize(s)
		return nil, fmt.Errorf("prepare %q on %s: %d parameters, but %d kinds given", sql, c.path, n, len(kinds))
	}
	st := &Stmt{conn: c, s: s, sql: sql, kinds: make([]C.uchar, len(kinds))}
	for i, k := range kinds {
		if k != Int && k != Text {
			C.sqlite3_finalize(s)
			return nil, fmt.Errorf("prepare %q on %s: parameter %d has unknown kind %d", sql, c.path, i+1, k)
		}
		st.kinds[i] = C.uchar(k)
	}
	c.stmts[st] = struct{}{}
	return st, nil
}

// Exec runs the statement once, in one cgo call: it binds the parameters,
// steps until the statement is done (reading every column of every row it
// returns), then resets it and clears the bindings. vals has one entry per
// parameter: an Int parameter's value, or a Text parameter's length in
// bytes; text holds the Text parameters' bytes back to back, in parameter
// order. Neither is kept after Exec returns, and Exec allocates nothing.
func (s *Stmt) Exec(vals []int64, text []byte) (Result, error) {
	if s.s == nil {
		return Result{}, fmt.Errorf("exec %q on %s: statement is closed", s.sql, s.conn.path)
	}
	if len(vals) != len(s.kinds) {
		return Result{}, fmt.Errorf("exec %q on %s: %d values for %d parameters", s.sql, s.conn.path, len(vals), len(s.kinds))
	}
	var kp *C.uchar
	var vp *C.longlong
	var tp *C.char
	if len(vals) > 0 {
		kp, vp = &s.kinds[0], (*C.longlong)(unsafe.Pointer(&vals[0]))
	}
	if len(text) > 0 {
		tp = (*C.char)(unsafe.Pointer(&text[0]))
	}
	r := &s.res
	C.ps_exec(s.s, C.int(len(vals)), kp, vp, tp, C.longlong(len(text)), r)
	switch r.rc {
	case C.SQLITE_DONE:
		return Result{Rows: int64(r.rows), Changes: int64(r.changes)}, nil
	case C.ps_bad_text:
		return Result{}, fmt.Errorf("exec %q on %s: the text lengths in vals add up to more than the %d bytes of text", s.sql, s.conn.path, len(text))
	}
	return Result{Rows: int64(r.rows)}, &Error{
		Op:   fmt.Sprintf("exec %q", s.sql),
		Path: s.conn.path,
		Code: int(r.errcode),
		Msg:  C.GoString(&r.msg[0]),
	}
}

// Close finalizes the statement. It is safe to call more than once, and
// Conn.Close closes every statement still open.
func (s *Stmt) Close() error {
	if s.s == nil {
		return nil
	}
	// sqlite3_finalize repeats the last execution's error, which Exec has
	// reported already; finalizing itself cannot fail.
	C.sqlite3_finalize(s.s)
	s.s = nil
	delete(s.conn.stmts, s)
	return nil
}
