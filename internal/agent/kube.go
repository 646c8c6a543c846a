package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Kubernetes attribution without the API server. A container's cgroup
// path names its pod's UID and its own container ID, as the kubelet lays
// them out with either cgroup driver:
//
//	cgroupfs: .../kubepods/burstable/pod<uid>/<container id>
//	systemd:  .../kubepods-burstable-pod<uid_with_underscores>.slice/cri-containerd-<id>.scope
//
// and the container runtime keeps each container's OCI config, whose
// annotations name the container, its pod and the pod's namespace
// (containerd: io.kubernetes.cri.*, CRI-O: io.kubernetes.*).

// Container is what a cgroup path and the runtime's state say of a
// Kubernetes container.
type Container struct {
	PodUID, ID                string
	Namespace, Pod, Container string
}

var (
	// podSegment is a pod's cgroup directory: pod<uid> (cgroupfs) or
	// kubepods[-qos]-pod<uid>.slice (systemd, dashes in the uid made
	// underscores).
	podSegment = regexp.MustCompile(`^(?:kubepods(?:-[a-z]+)?-)?pod([0-9a-f_-]{32,36})(?:\.slice)?$`)
	// containerSegment is a container's: its 64-hex id, bare (cgroupfs)
	// or in a runtime's scope (systemd).
	containerSegment = regexp.MustCompile(`^(?:(?:cri-containerd|crio|docker)-)?([0-9a-f]{64})(?:\.scope)?$`)
)

// kubeOf reads a container's pod and container from its cgroup path; ok is
// false when the path is not a Kubernetes container's.
func kubeOf(path string) (c Container, ok bool) {
	parts := strings.Split(filepath.Clean(path), "/")
	for i := len(parts) - 2; i >= 0; i-- {
		pm := podSegment.FindStringSubmatch(parts[i])
		cm := containerSegment.FindStringSubmatch(parts[i+1])
		if pm != nil && cm != nil {
			return Container{PodUID: strings.ReplaceAll(pm[1], "_", "-"), ID: cm[1]}, true
		}
	}
	return Container{}, false
}

// runtimeConfigs are where container runtimes keep a container's OCI
// config, by its id, under the host's root.
var runtimeConfigs = []string{
	"run/containerd/io.containerd.runtime.v2.task/k8s.io/%s/config.json",
	"run/containers/storage/overlay-containers/%s/userdata/config.json",
}

// names fills c's namespace, pod and container from the runtime's config
// of container c.ID under root ("/" on the host); they stay empty where no
// runtime's config is found.
func (c *Container) names(root string) {
	for _, pattern := range runtimeConfigs {
		b, err := os.ReadFile(filepath.Join(root, strings.Replace(pattern, "%s", c.ID, 1)))
		if err != nil {
			continue
		}
		var cfg struct {
			Annotations map[string]string `json:"annotations"`
		}
		if json.Unmarshal(b, &cfg) != nil {
			continue
		}
		a := cfg.Annotations
		first := func(keys ...string) string {
			for _, k := range keys {
				if v := a[k]; v != "" {
					return v
				}
			}
			return ""
		}
		c.Namespace = first("io.kubernetes.cri.sandbox-namespace", "io.kubernetes.pod.namespace")
		c.Pod = first("io.kubernetes.cri.sandbox-name", "io.kubernetes.pod.name")
		c.Container = first("io.kubernetes.cri.container-name", "io.kubernetes.container.name")
		return
	}
}

// containersUnder lists the Kubernetes containers' cgroups below dir (a
// kubepods directory), at most limit of them.
func containersUnder(dir string, limit int) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return filepath.SkipDir // unreadable (gone meanwhile): not walked
		case !d.IsDir():
			return nil
		case len(out) >= limit:
			return filepath.SkipAll
		}
		if _, ok := kubeOf(p); ok {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	return out
}
