// Command perfsleuth answers why a workload is slow, and whether it is really
// the storage. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/perfsleuth/perfsleuth/internal/cli"
)

func main() {
	// SIGINT and SIGTERM cancel the context: runs stop, clean up and print
	// what they measured. A second signal is left to the default handler
	// only after the first has been seen, so a stuck cleanup can be killed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	os.Exit(cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
