package report

import (
	"github.com/perfsleuth/perfsleuth/internal/model"
	"github.com/perfsleuth/perfsleuth/internal/sysinfo"
)

// Doctor renders what this host lets perfsleuth see, check by check.
func Doctor(h model.Host, checks []sysinfo.Check, warnings []string, o Options) []byte {
	d := &doc{color: o.Color}
	d.line("perfsleuth doctor: what this host and kernel let perfsleuth see")
	d.host(h)
	d.heading("checks")
	counts := map[string]int{}
	for _, c := range checks {
		counts[c.Status]++
		mark := "ok "
		switch c.Status {
		case "missing":
			mark = d.paint(ansiRed, "no ")
		case "degraded":
			mark = d.paint(ansiYellow, "~  ")
		}
		d.wrapped("  "+mark+" ", "       ", c.Name+": "+c.Detail)
		if c.Status != "ok" && c.Fix != "" {
			d.wrapped("       -> ", "          ", c.Fix)
		}
	}
	d.blank()
	d.line("%d ok, %d degraded, %d missing", counts["ok"], counts["degraded"], counts["missing"])
	for _, w := range warnings {
		d.wrapped("  "+d.paint(ansiRed, "!")+" ", "    ", w)
	}
	return d.b.Bytes()
}
