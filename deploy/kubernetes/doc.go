// Package kubernetes holds perfsleuth's Kubernetes manifests (the agent's
// DaemonSet, a diagnose Job) and their tests: the manifests decode
// strictly as the Kubernetes API's own types, and the capabilities they
// give are the ones perfsleuth needs, measured.
package kubernetes
