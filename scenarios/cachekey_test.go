package scenarios

// The scenario tests build cmd/perfsleuth with `go build` and run it, so the
// code they test is not among this package's imports, and `go test` would
// reuse a cached pass after perfsleuth's code changed (it did, once: a
// changed experiment package "passed" from the cache). Importing the CLI
// puts every package of perfsleuth in this package's cache key.
import _ "github.com/perfsleuth/perfsleuth/internal/cli"
