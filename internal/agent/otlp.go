package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/prometheus/procfs"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/perfsleuth/perfsleuth/internal/export"
	"github.com/perfsleuth/perfsleuth/internal/runner"
)

// OTLP export: the same figures as /metrics, pushed to an OpenTelemetry
// Collector (OTLP over HTTP, the official Go SDK) once a window. They are
// observable instruments read from the agent's counters at each export,
// so the two exports never disagree.

// startOTLP starts pushing to endpoint (http://host:4318, or with a path:
// the SDK's default is /v1/metrics) every interval; the returned function
// flushes a last export and stops.
func (a *Agent) startOTLP(ctx context.Context, endpoint string, interval time.Duration) (func(), error) {
	u, err := url.Parse(endpoint) // checked by New
	if err != nil {
		return nil, err
	}
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(endpointURL(u)))
	if err != nil {
		return nil, fmt.Errorf("--otlp %s: %w", endpoint, err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "perfsleuth-agent"))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval))))
	meter := mp.Meter("github.com/perfsleuth/perfsleuth/internal/agent")
	timeC, err := meter.Float64ObservableCounter("perfsleuth.agent.time", metric.WithUnit("s"),
		metric.WithDescription("Seconds the observed threads spent in each category, by cgroup and process name (perfsleuth_agent_time_seconds_total)."))
	if err != nil {
		return nil, err
	}
	windows, err := meter.Float64ObservableCounter("perfsleuth.agent.windows", metric.WithDescription("Windows in which the cgroup had processes and was observed."))
	if err != nil {
		return nil, err
	}
	verdict, err := meter.Int64ObservableGauge("perfsleuth.agent.verdict", metric.WithDescription("The last window's verdict for the cgroup (always 1)."))
	if err != nil {
		return nil, err
	}
	selfCPU, err := meter.Float64ObservableCounter("perfsleuth.agent.cpu", metric.WithUnit("s"), metric.WithDescription("CPU seconds of the agent process itself."))
	if err != nil {
		return nil, err
	}
	probeCPU, err := meter.Float64ObservableCounter("perfsleuth.agent.probe.cpu", metric.WithUnit("s"), metric.WithDescription("CPU seconds the eBPF programs took in the windows (estimated)."))
	if err != nil {
		return nil, err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		a.mu.Lock()
		defer a.mu.Unlock()
		for k, v := range a.seconds {
			o.ObserveFloat64(timeC, v, metric.WithAttributes(attribute.String("cgroup", k.cgroup), attribute.String("process", k.process), attribute.String("category", k.category)))
		}
		for cg, n := range a.windows {
			o.ObserveFloat64(windows, n, metric.WithAttributes(attribute.String("cgroup", cg)))
			if v := a.verdicts[cg]; v != nil {
				o.ObserveInt64(verdict, 1, metric.WithAttributes(attribute.String("cgroup", cg), attribute.String("primary", v.Primary), attribute.String("secondary", v.Secondary)))
			}
		}
		o.ObserveFloat64(probeCPU, a.probeCPU)
		if self, err := procfs.Self(); err == nil {
			if st, err := self.Stat(); err == nil {
				o.ObserveFloat64(selfCPU, st.CPUTime())
			}
		}
		return nil
	}, timeC, windows, verdict, selfCPU, probeCPU)
	if err != nil {
		return nil, err
	}
	return func() {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		mp.Shutdown(shut) // exports what is there once more, then stops
	}, nil
}

// endpointURL is u with the SDK's default path when it has none.
func endpointURL(u *url.URL) string {
	c := *u
	if c.Path == "" || c.Path == "/" {
		c.Path = "/v1/metrics"
	}
	return c.String()
}

// profilesURL is where OTLP/HTTP profiles go on the collector at u: the
// signal's path (/v1development/profiles while the signal is in
// development) under u's, with a /v1/metrics path, the metrics', replaced.
func profilesURL(u *url.URL) string {
	c := *u
	c.Path = strings.TrimSuffix(strings.TrimSuffix(c.Path, "/"), "/v1/metrics") + "/v1development/profiles"
	return c.String()
}

// pushProfiles sends the gzipped pprof profile b to the collector at
// endpoint (--otlp) as one OTLP profiles request (protobuf over HTTP, the
// collector's pdata encoding: export.OTLPProfiles), and says what it sent.
func pushProfiles(ctx context.Context, endpoint string, b []byte) (string, error) {
	u, err := url.Parse(endpoint) // checked by New
	if err != nil {
		return "", err
	}
	p, err := profile.ParseData(b)
	if err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	ps, err := export.OTLPProfiles(p, b, map[string]string{"service.name": "perfsleuth-agent", "host.name": host}, runner.Version)
	if err != nil {
		return "", err
	}
	body, err := pprofileotlp.NewExportRequestFromProfiles(ps).MarshalProto()
	if err != nil {
		return "", err
	}
	to := profilesURL(u)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("push to %s: %w", to, err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("push to %s: %s: %s", to, resp.Status, strings.TrimSpace(string(reply)))
	}
	msg := fmt.Sprintf("pushed %d profiles (%d samples, %d bytes) to %s", ps.ProfileCount(), ps.SampleCount(), len(body), to)
	// A collector that took part of it says so in the response
	// (partial_success); an empty body is a whole success.
	res := pprofileotlp.NewExportResponse()
	if len(reply) > 0 && res.UnmarshalProto(reply) == nil {
		if ps := res.PartialSuccess(); ps.RejectedProfiles() > 0 || ps.ErrorMessage() != "" {
			msg += fmt.Sprintf("; the collector rejected %d of them: %s", ps.RejectedProfiles(), ps.ErrorMessage())
		}
	}
	return msg, nil
}
