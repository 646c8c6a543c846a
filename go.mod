module github.com/perfsleuth/perfsleuth

go 1.26.8

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/cilium/ebpf v0.22.0
	github.com/prometheus/procfs v0.23.0
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.10
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
	gonum.org/v1/gonum v0.17.0
)

require github.com/inconshreveable/mousetrap v1.1.0 // indirect
