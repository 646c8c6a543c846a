package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// freePort is a TCP port free on 127.0.0.1 a moment ago (Prometheus is
// given its listen address, and does not say which port it took for 0).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestAgentPrometheus: a real Prometheus (installed by .ci/run) scrapes
// the agent observing an O_DIRECT read loop, and the PromQL query for the
// top category of its time returns storage-read.
func TestAgentPrometheus(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the agent's eBPF probes need root")
	}
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not found: .ci/run installs it (apt-get install prometheus)")
	}
	loop := startLoop(t)
	agentAddr := runAgent(t, Config{Window: 2 * time.Second, PIDs: []int{loop.Process.Pid}, MaxProcesses: 4, MaxCgroups: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: perfsleuth
    static_configs:
      - targets: [%q]
`, agentAddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	web := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.CommandContext(ctx, prom, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web, "--log.level=warn")
	out, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus's log:\n%s", log)
		}
	}()

	query := `topk(1, sum by (category) (perfsleuth_agent_time_seconds_total{cgroup="pids"}))`
	var top string
	var seconds string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		resp, err := http.Get("http://" + web + "/api/v1/query?query=" + url.QueryEscape(query))
		if err != nil {
			continue // not up yet
		}
		var r struct {
			Status string
			Data   struct {
				Result []struct {
					Metric map[string]string
					Value  [2]any
				}
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || r.Status != "success" || len(r.Data.Result) == 0 {
			continue
		}
		// Two windows at least: the first may have begun with the loop's start.
		m, _ := scrape(t, agentAddr)
		if m[`perfsleuth_agent_windows_total{cgroup="pids"}`] < 2 {
			continue
		}
		top, seconds = r.Data.Result[0].Metric["category"], fmt.Sprint(r.Data.Result[0].Value[1])
		break
	}
	t.Logf("%s: %s (%s s)", query, top, seconds)
	if top != "storage-read" {
		t.Errorf("Prometheus's top category %q: want storage-read for an O_DIRECT read loop", top)
	}
}
