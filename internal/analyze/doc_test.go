package analyze

import (
	"os"
	"testing"
)

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/findings.md")
	if err != nil {
		t.Fatalf("docs/findings.md: %v", err)
	}
	return string(b)
}
