package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfsleuth/perfsleuth/internal/agent"
	"github.com/perfsleuth/perfsleuth/internal/probe"
)

// defaultAgentWindow: each window loads the probes anew, which is most of
// the agent's cost (docs/agent.md: 3.2% of a CPU at 60 s, measured); a
// counter that moves once a minute suits rate() over a few minutes.
const defaultAgentWindow = time.Minute

// agentInterval is the agent's /proc sampling interval: its figures come
// from the eBPF accounting, and /proc's per-second timeline, which observe
// prints, is not served; sampling every thread of the selected processes
// each second cost the agent CPU for nothing.
const agentInterval = 10 * time.Second

// newAgentCmd is `perfsleuth agent`: the time accounting of cgroups or
// processes, window after window, served for Prometheus (internal/agent).
func newAgentCmd() *cobra.Command {
	cfg := agent.Config{Listen: "127.0.0.1:9464", Window: defaultAgentWindow, MaxProcesses: agent.DefaultMaxProcesses}
	cmd := &cobra.Command{
		Use:   "agent [flags]",
		Short: "Observe cgroups or processes continuously and serve their time accounting to Prometheus",
		Long: `Observe the processes of each --cgroup (and each -p PID) window after window, as
observe -p does, and serve on --listen, at /metrics, the seconds their threads spent in
each category by cgroup, process name and category (counters added up over the windows),
each cgroup's last verdict, and the agent's own CPU time, its probes' and its memory.
Prometheus text format, or OpenMetrics when the scraper asks for it. At most
--max-processes process names per cgroup get series of their own; the rest are summed
under process="other". At /profile?seconds=N, the on- and off-CPU stacks of the next N
seconds as a pprof profile; with push=otlp, sent to the --otlp collector as OTLP profiles
instead. Runs until Ctrl-C or SIGTERM. See docs/agent.md.`,
		Example: `  perfsleuth agent --cgroup /sys/fs/cgroup/system.slice/mariadb.service --listen :9464
  perfsleuth agent -p 1234 --window 10s
  curl -o cpu.pb.gz 'http://localhost:9464/profile?seconds=30'
  perfsleuth agent -p 1234 --otlp http://otel-collector:4318   # then: curl 'http://localhost:9464/profile?seconds=30&push=otlp'`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "address to serve /metrics on (host:port; :9464 for every interface)")
	fs.DurationVar(&cfg.Window, "window", cfg.Window, "length of one observation window")
	fs.StringSliceVar(&cfg.Cgroups, "cgroup", nil, "a cgroup directory whose processes, and those of the cgroups below it, are observed (repeatable), e.g. /sys/fs/cgroup/system.slice/redis.service; /sys/fs/cgroup for the whole machine")
	fs.IntSliceVarP(&cfg.PIDs, "pid", "p", nil, "a process observed by pid (repeatable)")
	fs.IntVar(&cfg.MaxProcesses, "max-processes", cfg.MaxProcesses, "process names per cgroup with series of their own; the rest are summed under process=\"other\"")
	fs.StringSliceVar(&cfg.Kubepods, "kubepods", nil, "the kubelet's kubepods cgroup (e.g. /sys/fs/cgroup/kubepods.slice): each Kubernetes container below it observed as a cgroup of its own, named by perfsleuth_agent_cgroup_info (repeatable)")
	fs.StringVar(&cfg.HostRoot, "host-root", "/", "where the host's root is mounted (in a container: /host), under which the container runtime's state names each container, its pod and namespace")
	var storage bool
	fs.BoolVar(&storage, "storage", false, "also count page-cache lookups and additions and SQLite pages by type: per-page programs that fire for every buffered read and page added, machine-wide (docs/probes.md: their cost)")
	fs.StringVar(&cfg.OTLP, "otlp", "", "also push the figures to an OpenTelemetry Collector's OTLP/HTTP address once a window, and profiles asked for with /profile?push=otlp, e.g. http://otel-collector:4318 (default: none)")
	fs.IntVar(&cfg.MaxCgroups, "max-cgroups", agent.DefaultMaxCgroups, "containers observed at most under --kubepods")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg.Probe = probe.Options{Interval: agentInterval, Storage: storage}
		cfg.Serving = func(addr string) {
			fmt.Fprintf(cmd.ErrOrStderr(), "perfsleuth agent: serving http://%s/metrics, a window every %s: Ctrl-C to end\n", addr, cfg.Window)
		}
		a, err := agent.New(cfg)
		if err != nil {
			return err
		}
		return a.Run(cmd.Context(), cmd.ErrOrStderr())
	}
	return cmd
}
