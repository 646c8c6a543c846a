package agent

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// TestAgentOTLP: with --otlp the agent pushes its figures to an OTLP/HTTP
// receiver (here the test's own, decoding the SDK's protobuf requests as
// a collector does): the read loop's time arrives as perfsleuth.agent.time
// with category storage-read, the largest.
func TestAgentOTLP(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the agent's eBPF probes need root")
	}
	var mu sync.Mutex
	per := map[string]float64{}
	requests := 0
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req colmetrics.ExportMetricsServiceRequest
		if r.URL.Path != "/v1/metrics" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP metrics request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		requests++
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name != "perfsleuth.agent.time" || m.GetSum() == nil {
						continue
					}
					clear(per) // cumulative: the last request has it all
					for _, dp := range m.GetSum().DataPoints {
						for _, kv := range dp.Attributes {
							if kv.Key == "category" {
								per[kv.Value.GetStringValue()] += dp.GetAsDouble()
							}
						}
					}
				}
			}
		}
		w.Write(nil)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	loop := startLoop(t)
	a, err := New(Config{Listen: "127.0.0.1:0", Window: 2 * time.Second, PIDs: []int{loop.Process.Pid}, MaxProcesses: 4, MaxCgroups: 1,
		OTLP: "http://" + ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, nil) }()
	for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		mu.Lock()
		n := per["storage-read"]
		mu.Unlock()
		if n > 0 {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d OTLP requests; perfsleuth.agent.time by category: %v", requests, per)
	top := ""
	for c, v := range per {
		if top == "" || v > per[top] {
			top = c
		}
	}
	if top != "storage-read" {
		t.Errorf("the collector's top category %q (%v): want storage-read", top, per)
	}
}

// TestAgentProfileOTLP: /profile?push=otlp sends the profile to the
// --otlp collector as OTLP profiles (here the test's own receiver, which
// decodes the request with the collector's pdata module): an off-CPU
// profile whose time is mostly storage-read for the O_DIRECT read loop;
// without --otlp, or with another place to push to, the request is refused
// with a 400 that says what to do.
func TestAgentProfileOTLP(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the agent's eBPF probes need root")
	}
	var mu sync.Mutex
	var got []pprofileotlp.ExportRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/metrics": // the window's metrics, TestAgentOTLP's part
		case "/v1development/profiles":
			req := pprofileotlp.NewExportRequest()
			if r.Header.Get("Content-Type") != "application/x-protobuf" || req.UnmarshalProto(body) != nil {
				http.Error(w, "not an OTLP profiles request", http.StatusBadRequest)
				return
			}
			mu.Lock()
			got = append(got, req)
			mu.Unlock()
		default:
			http.Error(w, "no such path", http.StatusNotFound)
			return
		}
		w.Write(nil)
	}))
	defer srv.Close()

	loop := startLoop(t)
	addr := runAgent(t, Config{Window: 2 * time.Second, PIDs: []int{loop.Process.Pid}, MaxProcesses: 4, MaxCgroups: 1, OTLP: srv.URL})
	resp, err := http.Get("http://" + addr + "/profile?seconds=2&push=otlp")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "pushed ") {
		t.Fatalf("/profile?push=otlp: %s: %s", resp.Status, body)
	}
	t.Logf("%s", strings.TrimSpace(string(body)))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d profile requests reached the collector, want 1", len(got))
	}
	ps := got[0].Profiles()
	d := ps.Dictionary()
	str := d.StringTable()
	per := map[string]int64{}
	for _, rp := range ps.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				if str.At(int(prof.SampleType().TypeStrindex())) != "offcpu" {
					continue
				}
				for _, s := range prof.Samples().All() {
					for _, ai := range s.AttributeIndices().All() {
						a := d.AttributeTable().At(int(ai))
						if str.At(int(a.KeyStrindex())) == "category" {
							per[a.Value().Str()] += s.Values().At(0)
						}
					}
				}
			}
		}
	}
	t.Logf("off-CPU ns by category at the collector: %v", per)
	wantMostlyStorageRead(t, per)
	wantBadRequests(t, addr, "push=elsewhere", "push=otlp&seconds=0")
}

// TestProfilesURL: the profiles' path on the --otlp address.
func TestProfilesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://c:4318":               "http://c:4318/v1development/profiles",
		"http://c:4318/":              "http://c:4318/v1development/profiles",
		"http://c:4318/v1/metrics":    "http://c:4318/v1development/profiles",
		"https://gw/otlp/v1/metrics/": "https://gw/otlp/v1development/profiles",
		"https://gw/otlp":             "https://gw/otlp/v1development/profiles",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := profilesURL(u); got != want {
			t.Errorf("profilesURL(%s) = %s, want %s", in, got, want)
		}
	}
}
