package probe

import (
	"os"
	"strings"
	"testing"
)

// TestNoUserNamesKeepsNoMappings: a session asked for no user names starts
// no mappings keeper (the agent's windows: no read of a new process's
// maps, no wake-up for one), and its namer leaves user frames as
// addresses with a note that says why, while kernel frames are named as
// ever; a session that names them keeps this process's mappings.
func TestNoUserNamesKeepsNoMappings(t *testing.T) {
	self := os.Getpid()
	s := NewSession([]int{self}, Options{NoUserNames: true}, nil)
	defer s.Close()
	if k := s.Mappings(); k != nil {
		t.Fatalf("NoUserNames: a mappings keeper was started")
	}
	_, uf, _, unote := s.Namer().Name(self, nil, []uint64{0x401000, 0x401234})
	if len(uf) != 2 || !strings.HasPrefix(uf[0], "0x") {
		t.Errorf("user frames %q, want the two addresses", uf)
	}
	if !strings.Contains(unote, "not asked for") {
		t.Errorf("note %q does not say the names were not asked for", unote)
	}

	named := NewSession([]int{self}, Options{}, nil)
	defer named.Close()
	k := named.Mappings()
	if k == nil {
		t.Fatal("a session that names user frames started no mappings keeper")
	}
	if k.Snapshot(self) == nil {
		t.Errorf("the keeper did not read this process's mappings")
	}
}
