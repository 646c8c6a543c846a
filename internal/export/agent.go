package export

// Metrics is a set of samples built sample by sample, for what serves
// them continuously (perfsleuth agent), named and encoded as the run's
// Prometheus export is: the perfsleuth_ prefix, base units, _total on
// counters.
type Metrics struct{ s promSet }

// NewMetrics makes an empty set.
func NewMetrics() *Metrics { return &Metrics{s: promSet{fams: map[string]*promFamily{}}} }

// Counter adds v to the counter name's sample with these labels (name,
// value pairs); help is kept from the family's first sample.
func (m *Metrics) Counter(name, help string, v float64, labels ...string) {
	m.s.counter(name, help).add(v, labels...)
}

// Gauge sets the gauge name's sample with these labels (the first value
// given for them is kept).
func (m *Metrics) Gauge(name, help string, v float64, labels ...string) {
	m.s.gauge(name, help).add(v, labels...)
}

// Histogram sets the histogram name's sample with these labels: counts[i]
// values at or below bounds[i] (not cumulative; bounds ascending), count
// values in all, summing to sum.
func (m *Metrics) Histogram(name, help string, bounds []float64, counts []uint64, count uint64, sum float64, labels ...string) {
	h := m.s.family(name, promHistogram, help).add(0, labels...)
	h.Sum, h.Count, h.Buckets = sum, count, nil
	var cum uint64
	for i, le := range bounds {
		cum += counts[i]
		h.Buckets = append(h.Buckets, promBucket{Le: le, Count: cum})
	}
}

// Encode writes the set in the Prometheus text format (0.0.4), or in
// OpenMetrics 1.0.0 when openMetrics is set.
func (m *Metrics) Encode(openMetrics bool) ([]byte, error) {
	fams := make([]*promFamily, 0, len(m.s.fams))
	for _, f := range m.s.fams {
		fams = append(fams, f)
	}
	if openMetrics {
		return writeOpenMetrics(fams)
	}
	return writeText(fams)
}
