package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every flag of every command states its default in --help.
func TestHelpStatesEveryDefault(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		var out bytes.Buffer
		c.SetOut(&out)
		if err := c.Help(); err != nil {
			t.Fatalf("%s --help: %v", c.CommandPath(), err)
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			line := ""
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.Contains(l, "--"+f.Name+" ") {
					line = l
				}
			}
			if line == "" {
				t.Errorf("%s --help does not list --%s", c.CommandPath(), f.Name)
			} else if !strings.Contains(line, "default") {
				t.Errorf("%s --help does not state the default of --%s: %q", c.CommandPath(), f.Name, line)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRoot(&bytes.Buffer{}, &bytes.Buffer{}))
}
