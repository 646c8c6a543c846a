package kubernetes

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// decode reads a manifest into the API type it must be, refusing any field
// the type does not have (a misspelt or misplaced key), as the API server's
// strict field validation does.
func decode(t *testing.T, name string, into any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// wantCaps are the capabilities both manifests give, and no more.
var wantCaps = []string{"BPF", "PERFMON", "SYS_PTRACE"}

// checkPod checks a pod spec's security: the node's pid namespace, root in
// the container, not privileged, no escalation, every capability dropped
// but wantCaps.
func checkPod(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	if !spec.HostPID {
		t.Errorf("%s: hostPID is not set: the probes see the node's pids", name)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", name, len(spec.Containers))
	}
	sc := spec.Containers[0].SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Fatalf("%s: no securityContext with capabilities", name)
	}
	if sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: privileged or allowing escalation: want neither", name)
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Errorf("%s: not run as uid 0 (the probes check for it)", name)
	}
	if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s: drops %v, want ALL", name, sc.Capabilities.Drop)
	}
	var add []string
	for _, c := range sc.Capabilities.Add {
		add = append(add, string(c))
	}
	if !slices.Equal(add, wantCaps) {
		t.Errorf("%s: adds %v, want %v", name, add, wantCaps)
	}
}

// TestManifests: the DaemonSet and the Job decode strictly as apps/v1
// DaemonSet and batch/v1 Job, and ask for wantCaps and no privilege.
func TestManifests(t *testing.T) {
	var ds appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	if ds.Kind != "DaemonSet" || ds.APIVersion != "apps/v1" {
		t.Errorf("daemonset.yaml is %s %s", ds.APIVersion, ds.Kind)
	}
	checkPod(t, "daemonset.yaml", ds.Spec.Template.Spec)
	args := strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"agent", "--listen=:9464", "--kubepods=", "--host-root=/host"} {
		if !strings.Contains(args, want) {
			t.Errorf("the agent's arguments %q lack %q", args, want)
		}
	}
	var job batchv1.Job
	decode(t, "diagnose-job.yaml", &job)
	if job.Kind != "Job" || job.APIVersion != "batch/v1" {
		t.Errorf("diagnose-job.yaml is %s %s", job.APIVersion, job.Kind)
	}
	checkPod(t, "diagnose-job.yaml", job.Spec.Template.Spec)
}

// TestKustomize: kubectl's own kustomize renders the base (the namespace
// and the DaemonSet), each document decoding strictly. Where kubectl is
// not installed the test says so and ends.
func TestKustomize(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found: the kustomize base is rendered where it is")
	}
	out, err := exec.Command(kubectl, "kustomize", ".").Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	docs := strings.Split(string(out), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents, want the namespace and the DaemonSet:\n%s", len(docs), out)
	}
	var ns corev1.Namespace
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &ns); err != nil || ns.Name != "perfsleuth" {
		t.Errorf("the namespace: %v %+v", err, ns.ObjectMeta)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &ds); err != nil || ds.Namespace != "perfsleuth" {
		t.Errorf("the DaemonSet: %v, namespace %q", err, ds.Namespace)
	}
}

// TestCapabilities runs perfsleuth as the manifests do, root with only
// wantCaps (setpriv bounds the capabilities, as the container runtime
// does), observing a process: it has its eBPF time accounting and reads
// the process's /proc files; without any one of the capabilities it
// loses one or the other. So the manifests ask for what is needed, and
// no more.
func TestCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not found")
	}
	bin := filepath.Join(t.TempDir(), "perfsleuth")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/perfsleuth").CombinedOutput(); err != nil {
		t.Fatalf("build perfsleuth: %v\n%s", err, out)
	}
	sleeper := exec.Command("sh", "-c", "while :; do sleep 0.05; done")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()

	// observe runs perfsleuth with caps and says what it could do.
	observe := func(caps []string) (ebpf, procIO bool) {
		set := "-all"
		for _, c := range caps {
			set += ",+" + strings.ToLower(c)
		}
		rec := filepath.Join(t.TempDir(), "run.json")
		cmd := exec.Command(setpriv, "--bounding-set="+set, "--inh-caps="+set, bin, "observe", "-p", strconv.Itoa(sleeper.Process.Pid), "--duration", "2s", "--json", rec)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", caps, err, out)
		}
		var run struct {
			TimeAccounting *struct{ Source string } `json:"time_accounting"`
			Warnings       []string
		}
		b, err := os.ReadFile(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &run); err != nil {
			t.Fatal(err)
		}
		ebpf = run.TimeAccounting != nil && run.TimeAccounting.Source == "ebpf"
		procIO = !slices.ContainsFunc(run.Warnings, func(w string) bool { return strings.Contains(w, "is not readable") })
		t.Logf("%v: eBPF accounting %v, /proc/PID/io read %v", caps, ebpf, procIO)
		return ebpf, procIO
	}
	start := time.Now()
	if ebpf, procIO := observe(wantCaps); !ebpf || !procIO {
		t.Errorf("with %v: eBPF accounting %v, /proc/PID/io read %v: want both", wantCaps, ebpf, procIO)
	}
	for _, drop := range wantCaps {
		fewer := slices.DeleteFunc(slices.Clone(wantCaps), func(c string) bool { return c == drop })
		if ebpf, procIO := observe(fewer); ebpf && procIO {
			t.Errorf("without %s perfsleuth lost nothing: the manifests ask for a capability they do not need", drop)
		}
	}
	t.Logf("4 observations in %s", time.Since(start).Round(time.Millisecond))
}
