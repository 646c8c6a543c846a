package export

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// This file turns the families prometheus.go builds into client_model's
// MetricFamily and encodes them with expfmt, the Prometheus libraries' own
// text encoder (exposition format 0.0.4). prometheus/common is pinned at
// v0.62.0: later versions' expfmt needs github.com/pandatix/go-abnf, which
// the module proxy does not serve.

type promType string

const (
	promCounter   promType = "counter"
	promGauge     promType = "gauge"
	promSummary   promType = "summary"
	promHistogram promType = "histogram"
)

type promLabel struct{ Name, Value string }

type promQuantile struct{ Q, V float64 }

type promMetric struct {
	Labels []promLabel
	Value  float64
	// Summaries only.
	Quantiles []promQuantile
	// Summaries and histograms.
	Sum   float64
	Count uint64
	// Histograms only: the cumulative count at each upper bound.
	Buckets []promBucket
}

type promBucket struct {
	Le    float64
	Count uint64
}

type promFamily struct {
	Name, Help string
	Type       promType
	Metrics    []*promMetric
}

var (
	promMetricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	promLabelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// writeText encodes the families, sorted by name as a registry gathers
// them, in the Prometheus text format (0.0.4).
func writeText(fams []*promFamily) ([]byte, error) {
	return encode(fams, func(b *bytes.Buffer, mf *dto.MetricFamily) error {
		_, err := expfmt.MetricFamilyToText(b, mf)
		return err
	})
}

// writeOpenMetrics encodes them in OpenMetrics 1.0.0, ended by # EOF.
func writeOpenMetrics(fams []*promFamily) ([]byte, error) {
	out, err := encode(fams, func(b *bytes.Buffer, mf *dto.MetricFamily) error {
		_, err := expfmt.MetricFamilyToOpenMetrics(b, mf)
		return err
	})
	if err != nil {
		return nil, err
	}
	return append(out, "# EOF\n"...), nil
}

// encode turns the families into client_model's and writes each with put.
func encode(fams []*promFamily, put func(*bytes.Buffer, *dto.MetricFamily) error) ([]byte, error) {
	sort.Slice(fams, func(i, j int) bool { return fams[i].Name < fams[j].Name })
	var b bytes.Buffer
	for _, f := range fams {
		if len(f.Metrics) == 0 {
			continue
		}
		if !promMetricName.MatchString(f.Name) {
			return nil, fmt.Errorf("invalid metric name %q", f.Name)
		}
		mf := &dto.MetricFamily{Name: proto(f.Name), Help: proto(strings.ToValidUTF8(f.Help, "\uFFFD"))}
		switch f.Type {
		case promCounter:
			mf.Type = dto.MetricType_COUNTER.Enum()
		case promGauge:
			mf.Type = dto.MetricType_GAUGE.Enum()
		case promSummary:
			mf.Type = dto.MetricType_SUMMARY.Enum()
		case promHistogram:
			mf.Type = dto.MetricType_HISTOGRAM.Enum()
		}
		for _, m := range f.Metrics {
			dm := &dto.Metric{}
			for _, l := range m.Labels {
				if !promLabelName.MatchString(l.Name) || strings.HasPrefix(l.Name, "__") {
					return nil, fmt.Errorf("metric %s: invalid label name %q", f.Name, l.Name)
				}
				dm.Label = append(dm.Label, &dto.LabelPair{Name: proto(l.Name), Value: proto(strings.ToValidUTF8(l.Value, "\uFFFD"))})
			}
			switch f.Type {
			case promCounter:
				dm.Counter = &dto.Counter{Value: &m.Value}
			case promGauge:
				dm.Gauge = &dto.Gauge{Value: &m.Value}
			case promSummary:
				sum := &dto.Summary{SampleSum: &m.Sum, SampleCount: &m.Count}
				for _, q := range m.Quantiles {
					sum.Quantile = append(sum.Quantile, &dto.Quantile{Quantile: &q.Q, Value: &q.V})
				}
				dm.Summary = sum
			case promHistogram:
				h := &dto.Histogram{SampleSum: &m.Sum, SampleCount: &m.Count}
				for _, b := range m.Buckets {
					h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: &b.Le, CumulativeCount: &b.Count})
				}
				dm.Histogram = h
			}
			mf.Metric = append(mf.Metric, dm)
		}
		if err := put(&b, mf); err != nil {
			return nil, fmt.Errorf("encode %s: %w", f.Name, err)
		}
	}
	return b.Bytes(), nil
}

func proto(s string) *string { return &s }
