package htmlreport

import (
	"bytes"
	"strings"
	"testing"
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
	for _, h := range hostiles {
		if bytes.Contains(page, []byte(h)) {
			i := bytes.Index(page, []byte(h))
			t.Errorf("%q appears unescaped: ...%s...", h, page[max(i-120, 0):min(i+len(h)+40, len(page))])
		}
	}
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
