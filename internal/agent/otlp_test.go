package agent

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

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
