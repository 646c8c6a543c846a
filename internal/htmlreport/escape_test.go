package htmlreport

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/perfsleuth/perfsleuth/internal/compare"
)

// TestHostileNamesStayText puts markup in every name the workload or the
// host can choose (paths, argv, thread names, stack frames, disk and
// syscall names, finding text, experiment names) and checks the bytes: no
// hostile string appears as it was, each appears escaped, and the page has
// exactly the markup it was built with.
func TestHostileNamesStayText(t *testing.T) {
	page, err := Render(hostileRun(t))
	if err != nil {
		t.Fatal(err)
	}
	noHostileAsIs(t, page)
	for _, tag := range []string{"<img", "<script>alert", "<script>" + "alert"} {
		if bytes.Contains(page, []byte(tag)) {
			t.Errorf("the page holds %q", tag)
		}
	}
	// The page's own markup only: one script (the zoom), one style, and as
	// many </svg> as <svg (an injected </svg> would close a chart early).
	if n := bytes.Count(page, []byte("<script")); n != 1 {
		t.Errorf("%d <script elements, want the page's one", n)
	}
	if n := bytes.Count(page, []byte("<style")); n != 1 {
		t.Errorf("%d <style elements, want 1", n)
	}
	if o, c := bytes.Count(page, []byte("<svg ")), bytes.Count(page, []byte("</svg>")); o != c {
		t.Errorf("%d <svg opened, %d </svg>: a name closed a chart", o, c)
	}
	if bytes.Contains(page, []byte("onerror=alert(1)>")) {
		t.Error("an onerror attribute ends in a real >")
	}
	// The names are on the page, escaped, in each kind of place: the
	// header, the charts (bar labels, flame frames and their data-n
	// attributes, tooltips) and the tables.
	escaped := map[string]int{
		"&lt;script&gt;alert(1)&lt;/script&gt;":             20,
		"&#34;&gt;&lt;img src=x onerror=alert(1)&gt;":       15,
		"it&#39;s &#34;quoted&#34; &amp; &#39;single&#39;":  10,
		"&lt;/svg&gt;&lt;script&gt;alert(2)&lt;/script&gt;": 10,
	}
	for e, least := range escaped {
		if n := bytes.Count(page, []byte(e)); n < least {
			t.Errorf("%q appears %d times, want at least %d (the hostile names must be shown, escaped)", e, n, least)
		}
	}
	for _, where := range []struct{ what, marker string }{
		{"a flame frame's name", `data-n="&lt;script&gt;alert(1)&lt;/script&gt;"`},
		{"a tooltip", "<title>&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"a bar label", `font-family="monospace">it&#39;s &#34;quoted&#34; &amp; &#39;single&#39; 14441<`},
		{"an experiment condition", `font-family="monospace">&lt;/svg&gt;&lt;script&gt;alert(2)&lt;/script&gt;<`},
		{"the host", "<dd>&lt;script&gt;alert(1)&lt;/script&gt;, Linux"},
		{"a table cell", `<td class="mono path" title="dev 253:1 inode 130, pid 14438">/<wbr>data/<wbr>&#34;&gt;&lt;img src=x onerror=alert(1)&gt;</td>`},
		{"a chart name", `data-chart="timeline-disk-___img_src_x_onerror_alert_1__-iops"`},
		{"a SQL statement", `>SELECT &lt;script&gt;alert(1)&lt;/script&gt;</td>`},
	} {
		if !bytes.Contains(page, []byte(where.marker)) {
			t.Errorf("%s is not shown escaped (looked for %s)", where.what, where.marker)
		}
	}
	// A severity the page does not know must not become a class.
	if strings.Contains(string(page), `sev-&#34;`) {
		t.Error("an unknown severity became a CSS class")
	}
}

// hostileComparisons are comparisons of real records with hostile names in
// everything a comparison takes from them: the sqlite settings (the sync
// behaviour issue, the run's description, the cause's evidence), the host
// name, kernel, IO scheduler and mount options, the perfsleuth command
// lines, the record paths, a diagnose record's measure name, and a
// command's argv.
func hostileComparisons(t testing.TB) map[string]*compare.Comparison {
	a, b := load(t, "compare-sync-a"), load(t, "compare-sync-b")
	a.Target.SQLite.Journal = hostileScript
	a.Host.Hostname = hostileImg
	b.Host.Kernel = hostileSVG
	b.Host.Storage.Scheduler = hostileQuote
	b.Host.Storage.MountOptions += "," + hostileScript
	a.Tool.Args = []string{"observe", "--json", hostileImg, "sqlite", "--journal", hostileScript}
	sync := compare.Compare(a, b)
	sync.A.Path, sync.B.Path = "/tmp/"+hostileImg+".json", hostileSVG

	a, b = load(t, "compare-repeats-a"), load(t, "compare-same-a")
	a.Experiments.Measure.Name, b.Experiments.Measure.Name = hostileScript, hostileScript
	a.Experiments.Measure.Unit, b.Experiments.Measure.Unit = hostileQuote, hostileQuote
	repeats := compare.Compare(a, b)

	a, b = load(t, "observe-command"), load(t, "observe-command")
	b.Target.Command.Argv = []string{"sh", "-c", hostileScript, hostileImg, hostileQuote}
	b.Tool.Args = append([]string{"observe", "--"}, b.Target.Command.Argv...)
	command := compare.Compare(a, b)
	return map[string]*compare.Comparison{"sync": sync, "repeats": repeats, "command": command}
}

// TestCompareHostileNamesStayText checks the comparison page as
// TestHostileNamesStayText checks the run page: no hostile string as it
// was, each one escaped where the page shows it, no markup but the page's
// own (no script at all, one style, balanced charts).
func TestCompareHostileNamesStayText(t *testing.T) {
	comparisons := hostileComparisons(t)
	for _, name := range slices.Sorted(maps.Keys(comparisons)) {
		t.Run(name, func(t *testing.T) {
			page, err := RenderCompare(comparisons[name])
			if err != nil {
				t.Fatal(err)
			}
			noHostileAsIs(t, page)
			for _, tag := range []string{"<img", "<script", "onerror=alert(1)>"} {
				if bytes.Contains(page, []byte(tag)) {
					t.Errorf("the page holds %q", tag)
				}
			}
			if n := bytes.Count(page, []byte("<style")); n != 1 {
				t.Errorf("%d <style elements, want 1", n)
			}
			if o, c := bytes.Count(page, []byte("<svg ")), bytes.Count(page, []byte("</svg>")); o != c {
				t.Errorf("%d <svg opened, %d </svg>: a name closed a chart", o, c)
			}
			for _, m := range compareMarkers[name] {
				if !bytes.Contains(page, []byte(m.marker)) {
					t.Errorf("%s is not shown escaped (looked for %s)", m.what, m.marker)
				}
			}
		})
	}
}

// compareMarkers are where each comparison shows its hostile names: the
// header, the comparability issue, the tables, the headline's advice and
// charts, the explanation.
var compareMarkers = map[string][]struct{ what, marker string }{
	"sync": {
		{"a run's description", `<span class="what">sqlite insert/update/delete, journal=&lt;script&gt;alert(1)&lt;/script&gt; sync=normal`},
		{"a run's host", `observe on &#34;&gt;&lt;img src=x onerror=alert(1)&gt;, `},
		{"a run's path", `· &lt;/svg&gt;&lt;script&gt;alert(2)&lt;/script&gt;</span>`},
		{"the sync setting that makes the runs not comparable", `<dt>A</dt><dd>journal=&lt;script&gt;alert(1)&lt;/script&gt; sync=normal</dd>`},
		{"the kernel in the environment table", `<td class="mono">&lt;/svg&gt;&lt;script&gt;alert(2)&lt;/script&gt;</td>`},
		{"the IO scheduler in the environment table", `<td class="mono">it&#39;s &#34;quoted&#34; &amp; &#39;single&#39;</td>`},
		{"the command line to repeat a run", `--journal &#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39;</code>`},
		{"the explanation", `named first (A journal=&lt;script&gt;alert(1)&lt;/script&gt; sync=normal`},
	},
	"repeats": {
		{"the measure in a chart's tooltip", `<title>A · median &lt;script&gt;alert(1)&lt;/script&gt;: 58,165</title>`},
		{"the measure in a chart's name", `aria-label="each side&#39;s median &lt;script&gt;alert(1)&lt;/script&gt;"`},
		{"the measure's unit", `median (it&#39;s &#34;quoted&#34; &amp; &#39;single&#39;)`},
	},
	"command": {
		{"a command's argv", `<span class="what">command: sh -c &lt;script&gt;alert(1)&lt;/script&gt; &#34;&gt;&lt;img src=x onerror=alert(1)&gt; it&#39;s &#34;quoted&#34; &amp; &#39;single&#39;</span>`},
	},
}

// noHostileAsIs fails for each hostile string that appears in page as it
// was, unescaped, showing where.
func noHostileAsIs(t *testing.T, page []byte) {
	t.Helper()
	for _, h := range hostiles {
		if i := bytes.Index(page, []byte(h)); i >= 0 {
			t.Errorf("%q appears unescaped: ...%s...", h, page[max(i-120, 0):min(i+len(h)+40, len(page))])
		}
	}
}
