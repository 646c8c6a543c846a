package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	testUID = "0b6c3f52-8d0e-4c1a-9a4e-2f1b7c9d5e60"
	testCID = "4f2a9c1e7b3d5a6f8e0c2b4d6a8f0e1c3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a"
)

// runtimeConfig writes a container runtime's OCI config for id under root,
// at the path pattern's place, with these annotations.
func runtimeConfig(t *testing.T, root, pattern, id string, annotations map[string]string) {
	t.Helper()
	p := filepath.Join(root, strings.Replace(pattern, "%s", id, 1))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	var kv []string
	for k, v := range annotations {
		kv = append(kv, fmt.Sprintf("%q: %q", k, v))
	}
	if err := os.WriteFile(p, []byte(`{"ociVersion": "1.1.0", "annotations": {`+strings.Join(kv, ", ")+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestKubeOf reads the pod and container from the cgroup paths the
// kubelet makes with each driver, and their names from containerd's and
// CRI-O's state; other paths are not containers.
func TestKubeOf(t *testing.T) {
	under := strings.ReplaceAll(testUID, "-", "_")
	for _, path := range []string{
		"/sys/fs/cgroup/cpu/kubepods/burstable/pod" + testUID + "/" + testCID,
		"/sys/fs/cgroup/cpu/kubepods/pod" + testUID + "/" + testCID,
		"/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + under + ".slice/cri-containerd-" + testCID + ".scope",
		"/sys/fs/cgroup/kubepods.slice/kubepods-pod" + under + ".slice/crio-" + testCID + ".scope",
	} {
		c, ok := kubeOf(path)
		if !ok || c.PodUID != testUID || c.ID != testCID {
			t.Errorf("%s: %+v, %v: want pod %s, container %s", path, c, ok, testUID, testCID)
		}
	}
	for _, path := range []string{"/sys/fs/cgroup/system.slice/redis.service", "/sys/fs/cgroup/cpu/kubepods/burstable/pod" + testUID} {
		if c, ok := kubeOf(path); ok {
			t.Errorf("%s read as a container: %+v", path, c)
		}
	}

	root := t.TempDir()
	runtimeConfig(t, root, runtimeConfigs[0], testCID, map[string]string{
		"io.kubernetes.cri.sandbox-namespace": "shop", "io.kubernetes.cri.sandbox-name": "db-0", "io.kubernetes.cri.container-name": "mariadb"})
	other := strings.Repeat("ab", 32)
	runtimeConfig(t, root, runtimeConfigs[1], other, map[string]string{
		"io.kubernetes.pod.namespace": "shop", "io.kubernetes.pod.name": "cache-7f9", "io.kubernetes.container.name": "redis"})
	for id, want := range map[string]Container{
		testCID:                  {ID: testCID, Namespace: "shop", Pod: "db-0", Container: "mariadb"},
		other:                    {ID: other, Namespace: "shop", Pod: "cache-7f9", Container: "redis"},
		strings.Repeat("cd", 32): {ID: strings.Repeat("cd", 32)},
	} {
		c := Container{ID: id}
		c.names(root)
		if c != want {
			t.Errorf("%s: %+v, want %+v", id[:8], c, want)
		}
	}
}

// TestAgentKubepods: a kubepods tree of real cgroups, a container's
// cgroup holding an O_DIRECT read loop, and containerd's state naming it: the
// agent observes the container as a cgroup of its own, names it in
// perfsleuth_agent_cgroup_info, and counts its reads under it.
func TestAgentKubepods(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the agent's eBPF probes and the test's cgroups need root")
	}
	base := testCgroup(t)
	kubepods := filepath.Join(base, "kubepods")
	container := filepath.Join(kubepods, "burstable", "pod"+testUID, testCID)
	if err := os.MkdirAll(container, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range []string{container, filepath.Dir(container), filepath.Join(kubepods, "burstable"), kubepods} {
			for range 50 {
				if err := os.Remove(d); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	root := t.TempDir()
	runtimeConfig(t, root, runtimeConfigs[0], testCID, map[string]string{
		"io.kubernetes.cri.sandbox-namespace": "shop", "io.kubernetes.cri.sandbox-name": "db-0", "io.kubernetes.cri.container-name": "syncer"})
	loop := startIn(t, container)

	addr := runAgent(t, Config{Window: 2 * time.Second, Kubepods: []string{kubepods}, HostRoot: root, MaxProcesses: 4, MaxCgroups: 8})
	m := waitWindows(t, addr, container, 2)
	info := fmt.Sprintf("perfsleuth_agent_cgroup_info{cgroup=%q,namespace=\"shop\",pod=\"db-0\",pod_uid=%q,container=\"syncer\",container_id=%q}", container, testUID, testCID)
	if m[info] != 1 {
		t.Errorf("no %s in %v", info, m)
	}
	top, per := topCategory(m, container)
	t.Logf("container %s (pid %d): %v", testCID[:12], loop.Process.Pid, per)
	if top != "storage-read" {
		t.Errorf("the container's top category %q (%v): want storage-read", top, per)
	}
}
