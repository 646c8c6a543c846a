package htmlreport

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// The browser test loads each rendered page in a real headless Chromium
// with the network cut off, and checks what a reader would see: no console
// error, no script from the record, no request, every chart drawn with a
// size and shapes, the styles applied, the flame-graph zoom working, and a
// screenshot that is not blank. Screenshots go to $HTMLREPORT_SCREENSHOTS
// when it is set (to look at them), else to a temporary directory.

// browsers are the names Chromium goes by on PATH (Debian's is chromium).
var browsers = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

func findBrowser(t *testing.T) string {
	for _, name := range browsers {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("no Chromium on PATH (looked for %s): apt-get install chromium to run the browser test", strings.Join(browsers, ", "))
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set: the browser test must run)")
	}
	t.Skip(msg)
	return ""
}

// pageEvents collects what the page did that it must not do.
type pageEvents struct {
	mu       sync.Mutex
	problems []string
	dialogs  []string
	requests []string
}

func (e *pageEvents) add(list *[]string, s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	*list = append(*list, s)
}

func (e *pageEvents) snapshot() (problems, dialogs, requests []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.problems), slices.Clone(e.dialogs), slices.Clone(e.requests)
}

// domChart is what the browser made of one svg[data-chart].
type domChart struct {
	Name    string  `json:"name"`
	W       float64 `json:"w"`
	H       float64 `json:"h"`
	Shapes  int     `json:"shapes"`
	Painted int     `json:"painted"`
}

type domReport struct {
	Charts    []domChart `json:"charts"`
	Scripts   int        `json:"scripts"`
	Images    int        `json:"images"`
	Sections  []string   `json:"sections"`
	HeaderBG  string     `json:"headerBG"`
	OverflowX bool       `json:"overflowX"`
	BodyText  int        `json:"bodyText"`
}

const inspectJS = `(() => {
  const charts = [...document.querySelectorAll('svg[data-chart]')].map(s => {
    const r = s.getBoundingClientRect();
    const shapes = [...s.querySelectorAll('rect,polyline,circle,line')];
    const painted = shapes.filter(e => { const b = e.getBoundingClientRect(); return b.width > 0 || b.height > 0; }).length;
    return {name: s.getAttribute('data-chart'), w: r.width, h: r.height, shapes: shapes.length, painted: painted};
  });
  return {
    charts: charts,
    scripts: document.scripts.length,
    images: document.images.length,
    sections: [...document.querySelectorAll('main > section')].map(s => s.id),
    headerBG: getComputedStyle(document.querySelector('header.top')).backgroundColor,
    overflowX: document.documentElement.scrollWidth > document.documentElement.clientWidth + 1,
    bodyText: document.body.innerText.length,
  };
})()`

func TestPagesInABrowser(t *testing.T) {
	exe := findBrowser(t)
	shots := os.Getenv("HTMLREPORT_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	// The deadline is on the allocator: when it passes, the browser goes.
	deadline, stop := context.WithTimeout(context.Background(), 4*time.Minute)
	defer stop()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // the tests run as root, where Chromium's sandbox refuses to start
		chromedp.WindowSize(1280, 900),
		// No network: every request goes to a proxy that is not there,
		// and no name resolves. The page must need neither.
		chromedp.ProxyServer("http://127.0.0.1:9"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("allow-file-access-from-files", false),
		// Chromium leaves its singleton socket's directory
		// (org.chromium.Chromium.XXXXXX) in $TMPDIR: one per run, 47
		// of them in /tmp after a day's test runs.
		chromedp.Env("TMPDIR="+t.TempDir()),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(deadline, opts...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}

	// Each page: how to render it, the charts it must draw, its sections
	// in order and its number of scripts (the run page has the zoom, the
	// comparison page none).
	type pageCase struct {
		name     string
		render   func(testing.TB) ([]byte, error)
		charts   []string
		sections []string
		scripts  int
	}
	runPage := func(run func(testing.TB) *model.Run) func(testing.TB) ([]byte, error) {
		return func(t testing.TB) ([]byte, error) { return Render(run(t)) }
	}
	var pages []pageCase
	for _, c := range cases() {
		pages = append(pages, pageCase{c.name, runPage(c.run), c.charts, runSections, 1})
	}
	pages = append(pages, pageCase{"hostile", runPage(hostileRun), nil, runSections, 1})
	for _, cc := range compareCases {
		render := func(t testing.TB) ([]byte, error) { return RenderCompare(comparePair(t, cc.a, cc.b)) }
		pages = append(pages, pageCase{"compare-" + cc.name, render, cc.charts, compareSections, 0})
	}
	hostileCmp := hostileComparisons(t)
	for _, name := range slices.Sorted(maps.Keys(hostileCmp)) {
		c := hostileCmp[name]
		render := func(testing.TB) ([]byte, error) { return RenderCompare(c) }
		pages = append(pages, pageCase{"compare-hostile-" + name, render, nil, compareSections, 0})
	}
	dir := t.TempDir()
	for _, pc := range pages {
		t.Run(pc.name, func(t *testing.T) {
			html, err := pc.render(t)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, pc.name+".html")
			if err := os.WriteFile(path, html, 0o644); err != nil {
				t.Fatal(err)
			}
			fileURL := (&url.URL{Scheme: "file", Path: path}).String()
			tab, closeTab := chromedp.NewContext(browserCtx)
			defer closeTab()
			ev := &pageEvents{}
			err = chromedp.Listen(tab, func(e any) {
				switch e := e.(type) {
				case *runtime.EventConsoleAPICalled:
					// The page never logs: any console call is a problem.
					var args []string
					for _, a := range e.Args {
						args = append(args, string(a.Value)+a.Description)
					}
					ev.add(&ev.problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
				case *runtime.EventExceptionThrown:
					d := e.ExceptionDetails
					msg := d.Text
					if d.Exception != nil {
						msg += " " + d.Exception.Description
					}
					ev.add(&ev.problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
				case *log.EventEntryAdded:
					if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
						ev.add(&ev.problems, fmt.Sprintf("log %s (%s): %s", e.Entry.Level, e.Entry.Source, e.Entry.Text))
					}
				case *cdppage.EventJavascriptDialogOpening:
					ev.add(&ev.dialogs, fmt.Sprintf("%s: %s", e.Type, e.Message))
					// Close it, or the page would wait for ever; not from
					// this func, which must not send commands.
					go chromedp.Call(tab, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: false})
				case *network.EventRequestWillBeSent:
					if u := e.Request.URL; !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") {
						ev.add(&ev.requests, u)
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := chromedp.Do(tab, chromedp.Navigate(fileURL)); err != nil {
				t.Fatalf("load %s: %v", fileURL, err)
			}
			dom, err := chromedp.Run(tab, chromedp.Evaluate[domReport](inspectJS))
			if err != nil {
				t.Fatalf("inspect the page: %v", err)
			}
			checkDOM(t, html, dom, pc.charts, pc.sections, pc.scripts)
			if pc.name == "full" {
				checkZoom(t, tab)
			}
			shot, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			png := filepath.Join(shots, pc.name+".png")
			if err := os.WriteFile(png, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			checkNotBlank(t, shot, png)
			// Events arrive on their own goroutine: give the last ones a
			// moment before reading them.
			chromedp.Do(tab, chromedp.Sleep(200*time.Millisecond))
			problems, dialogs, requests := ev.snapshot()
			for _, p := range problems {
				t.Errorf("the page reported: %s", p)
			}
			for _, d := range dialogs {
				t.Errorf("a script from the record ran: dialog %s", d)
			}
			for _, r := range requests {
				t.Errorf("the page asked the network for %s", r)
			}
		})
	}
}

// runSections are the run page's sections in order (besides the warnings,
// which only some runs have).
var runSections = []string{"verdict", "findings", "workload", "time", "stacks", "experiments", "storage", "observation"}

// checkDOM compares what the browser built with what was rendered: the
// charts, the page's scripts and its sections in order.
func checkDOM(t *testing.T, html []byte, dom domReport, want, wantSections []string, scripts int) {
	t.Helper()
	var names []string
	for _, c := range dom.Charts {
		names = append(names, c.Name)
		if c.W < 100 || c.H < 30 {
			t.Errorf("chart %q is %.0f×%.0f px: too small to read", c.Name, c.W, c.H)
		}
		if c.Shapes == 0 || c.Painted == 0 {
			t.Errorf("chart %q drew nothing (%d shapes, %d with a size)", c.Name, c.Shapes, c.Painted)
		}
	}
	// The browser must see exactly the charts that were written: an
	// injected </svg> or a broken tag would lose or split one.
	if src := chartNames(html); !slices.Equal(names, src) {
		t.Errorf("the browser sees charts %v, the page has %v", names, src)
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("no chart %q in the browser", w)
		}
	}
	if dom.Scripts != scripts || dom.Images != 0 {
		t.Errorf("%d scripts and %d images in the document, want the page's %d script(s) and no image", dom.Scripts, dom.Images, scripts)
	}
	var got []string
	for _, s := range dom.Sections {
		if s != "warnings" {
			got = append(got, s)
		}
	}
	if !slices.Equal(got, wantSections) {
		t.Errorf("sections %v, want %v", got, wantSections)
	}
	// The style sheet applied (the policy allows it by hash): the header
	// has its dark background.
	if dom.HeaderBG != "rgb(31, 42, 55)" {
		t.Errorf("header background is %q: the page's style did not apply", dom.HeaderBG)
	}
	if dom.OverflowX {
		t.Error("the page is wider than a 1280 px window")
	}
	if dom.BodyText < 500 {
		t.Errorf("the page shows only %d characters of text", dom.BodyText)
	}
}

// checkZoom clicks an on-CPU frame and checks the script widened it to the
// whole graph, hid what is not under it, and that the root zooms back out.
func checkZoom(t *testing.T, tab context.Context) {
	t.Helper()
	type zoom struct {
		Before, After, Restored float64
		Hidden                  int
		Zoom                    string
	}
	z, err := chromedp.Run(tab, chromedp.Evaluate[zoom](`(() => {
  const svg = document.querySelector('svg[data-chart="flame-oncpu"]');
  const frames = [...svg.querySelectorAll('g.f')];
  const g = frames.find(f => f.getAttribute('data-n').startsWith('pwrite64'));
  const width = () => parseFloat(g.querySelector('rect').getAttribute('width'));
  const before = width();
  g.querySelector('rect').dispatchEvent(new MouseEvent('click', {bubbles: true}));
  const after = width();
  const hidden = frames.filter(f => f.getAttribute('display') === 'none').length;
  const zoom = svg.getAttribute('data-zoom');
  frames[0].querySelector('rect').dispatchEvent(new MouseEvent('click', {bubbles: true}));
  return {Before: before, After: after, Restored: width(), Hidden: hidden, Zoom: zoom};
})()`))
	if err != nil {
		t.Fatalf("zoom: %v", err)
	}
	if z.After < 1100 || z.Before > 300 || z.Hidden == 0 {
		t.Errorf("clicking a frame %.0f px wide made it %.0f px and hid %d frames: the zoom did not run", z.Before, z.After, z.Hidden)
	}
	if z.Restored != z.Before {
		t.Errorf("clicking the root left the frame %.1f px wide, want %.1f again", z.Restored, z.Before)
	}
}

// checkNotBlank decodes the screenshot and checks it shows a page: a wide
// image, many colours, and a good share of pixels that are not background.
func checkNotBlank(t *testing.T, shot []byte, path string) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() < 1000 || b.Dy() < 600 {
		t.Errorf("screenshot %s is %v", path, b.Size())
	}
	colors := map[[3]uint8]bool{}
	var ink, all int
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}
			colors[[3]uint8{c[0] >> 3, c[1] >> 3, c[2] >> 3}] = true
			all++
			if c != [3]uint8{0xff, 0xff, 0xff} && c != [3]uint8{0xf4, 0xf5, 0xf7} {
				ink++
			}
		}
	}
	share := float64(ink) / float64(all)
	t.Logf("screenshot %s: %v, %d colours, %.0f%% not background", path, b.Size(), len(colors), share*100)
	if len(colors) < 100 || share < 0.05 {
		t.Errorf("screenshot %s looks blank: %d colours, %.1f%% not background", path, len(colors), share*100)
	}
	// The header band is the dark one the style sheet gives it.
	if r, g, bl, _ := img.At(5, 5).RGBA(); r>>8 != 0x1f || g>>8 != 0x2a || bl>>8 != 0x37 {
		t.Errorf("screenshot %s: the top left pixel is #%02x%02x%02x, not the header's #1f2a37", path, r>>8, g>>8, bl>>8)
	}
}
