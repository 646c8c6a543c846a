package target

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The observed built-in benchmark runs in a child perfsleuth process
// (`perfsleuth __workload`), so that what is observed is the workload alone,
// not perfsleuth's own sampling threads, and so that the later eBPF probes
// can filter on one process. The two talk over two pipes:
//
//	parent -> child (fd 4): a line with the target as JSON, later "start\n",
//	    and it closes the pipe once it has stopped observing
//	child -> parent (fd 3): JSON events, one per line:
//	    {"event":"prepared"}
//	    {"event":"progress","fraction":0.42}
//	    {"event":"done","result":{...},"interrupted":false}
//	    {"event":"warning","message":"..."}
//	    {"event":"error","message":"..."}
//
// The child stops on SIGINT/SIGTERM (and gets SIGTERM when the parent dies,
// via PR_SET_PDEATHSIG), reports what it measured, and removes its files.
const (
	childCommand = "__workload"
	childEventFD = 3
	childCtrlFD  = 4
)

// ChildCommand is the hidden subcommand name the CLI registers for RunChild.
const ChildCommand = childCommand

type childEvent struct {
	Event       string        `json:"event"`
	Fraction    float64       `json:"fraction,omitempty"`
	Result      *model.Result `json:"result,omitempty"`
	Interrupted bool          `json:"interrupted,omitempty"`
	Message     string        `json:"message,omitempty"`
}

// RunChild is the child side of the protocol. ctx is cancelled on SIGINT or
// SIGTERM by the caller.
func RunChild(ctx context.Context) error {
	events := os.NewFile(childEventFD, "events")
	ctrl := os.NewFile(childCtrlFD, "control")
	if events == nil || ctrl == nil {
		return errors.New("__workload is perfsleuth's internal child process: run 'perfsleuth observe' instead")
	}
	defer events.Close()
	var mu sync.Mutex
	enc := json.NewEncoder(events)
	send := func(e childEvent) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(e)
	}
	fail := func(err error) error {
		send(childEvent{Event: "error", Message: err.Error()})
		return err
	}

	in := bufio.NewReader(ctrl)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return fail(fmt.Errorf("read target from parent: %w", err))
	}
	var t model.Target
	if err := json.Unmarshal(line, &t); err != nil {
		return fail(fmt.Errorf("decode target: %w", err))
	}
	b, err := Lookup(t.Kind)
	if err != nil {
		return fail(err)
	}
	w, err := b.New(t)
	if err != nil {
		return fail(err)
	}
	if err := w.Prepare(ctx); err != nil {
		cerr := w.Cleanup()
		if ctx.Err() != nil {
			return fail(errors.Join(ErrInterrupted, cerr))
		}
		return fail(errors.Join(err, cerr))
	}
	send(childEvent{Event: "prepared"})

	// Wait for the parent's go, which comes once its observers are running.
	started := make(chan error, 1)
	go func() {
		l, err := in.ReadString('\n')
		if err == nil && strings.TrimSpace(l) != "start" {
			err = fmt.Errorf("unexpected control line %q", l)
		}
		if err == io.EOF {
			err = errors.New("parent went away before the run started")
		}
		started <- err
	}()
	select {
	case err := <-started:
		if err != nil {
			return fail(errors.Join(err, w.Cleanup()))
		}
	case <-ctx.Done():
		return fail(errors.Join(ErrInterrupted, w.Cleanup()))
	}

	res, err := w.Run(ctx, func(f float64) { send(childEvent{Event: "progress", Fraction: f}) })
	if err != nil {
		return fail(errors.Join(err, w.Cleanup()))
	}
	send(childEvent{Event: "done", Result: res, Interrupted: ctx.Err() != nil})
	// Stay until the parent has taken its last sample of this process (it
	// closes the control pipe), so the observation window ends with the
	// measured phase and the process's counters are still readable.
	io.Copy(io.Discard, in)
	if err := w.Cleanup(); err != nil {
		send(childEvent{Event: "warning", Message: "cleanup: " + err.Error()})
	}
	return nil
}
