//go:build amd64

package timeacct

import "testing"

func TestCloseThread(t *testing.T) {
	v := timeacctTaThread{Tid: 5, Tgid: 4, FirstNs: 100, LastNs: 700, State: stateBlocked, Cat: CatLock}
	v.Ns[CatCPU] = 400
	v.Ns[CatSleep] = 200
	got := closeThread(&v, 0, 1000)
	if got.Ns[CatLock] != 300 || got.WallNs != 900 {
		t.Errorf("open lock interval: got lock %d wall %d, want 300 and 900", got.Ns[CatLock], got.WallNs)
	}

	v = timeacctTaThread{FirstNs: 100, LastNs: 600, ExitNs: 600, Exited: 1, State: stateRunning}
	v.Ns[CatCPU] = 500
	got = closeThread(&v, 0, 1000)
	if got.Ns[CatCPU] != 500 || got.WallNs != 500 || !got.Exited {
		t.Errorf("exited: got %+v, want cpu 500 wall 500", got)
	}

	// A thread seen before the window opened (at 300) counts from it: its
	// open interval and its wall both start there.
	v = timeacctTaThread{FirstNs: 100, LastNs: 200, State: stateBlocked, Cat: CatSleep}
	got = closeThread(&v, 300, 1000)
	if got.Ns[CatSleep] != 700 || got.WallNs != 700 {
		t.Errorf("window opened at 300: got sleep %d wall %d, want 700 and 700", got.Ns[CatSleep], got.WallNs)
	}
}
