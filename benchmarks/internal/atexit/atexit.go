// Package atexit keeps what a benchmark program must undo before it
// leaves (servers and workloads it started, its scratch directory), on
// every path: the end, and an error that exits at once.
package atexit

import "os"

var undo []func()

// Add remembers f, to run before leaving: the last added runs first.
func Add(f func()) { undo = append(undo, f) }

// Run runs what Add remembered, once.
func Run() {
	for i := len(undo) - 1; i >= 0; i-- {
		undo[i]()
	}
	undo = nil
}

// Exit runs what Add remembered and exits with code.
func Exit(code int) {
	Run()
	os.Exit(code)
}
