// Package controlplane finds the test control-plane binaries that
// hack/build-control-plane.sh builds into bin/, for the packages that start
// a real kube-apiserver and etcd with envtest.
package controlplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Assets is the directory holding the named binaries: KUBEBUILDER_ASSETS,
// or bin/ under the repository root (repoRoot, relative to the test's
// package directory). A missing binary is an error that says how to build it.
func Assets(repoRoot string, binaries ...string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		var err error
		if dir, err = filepath.Abs(filepath.Join(repoRoot, "bin")); err != nil {
			return "", err
		}
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("these tests need %s in %s: run `make control-plane` (make test does), or set KUBEBUILDER_ASSETS", b, dir)
		}
	}
	return dir, nil
}

// Environment is an envtest environment for ndp: the control plane from
// assets, ndp's CRDs and openshift/api's (repoRoot/manifests/crds), and,
// with webhooks, the shipped webhook configuration pointed at a local port
// with a certificate of its own.
func Environment(repoRoot, assets string, webhooks bool) *envtest.Environment {
	env := &envtest.Environment{
		CRDDirectoryPaths:        []string{filepath.Join(repoRoot, "manifests", "crds"), filepath.Join(repoRoot, "manifests", "crds", "openshift")},
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: 2 * time.Minute, // a loaded 2-core machine
	}
	// Each path set, as envtest prefers KUBEBUILDER_ASSETS to the assets
	// directory.
	bin := dieWithParent(assets)
	env.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(bin, "etcd")}
	env.ControlPlane.GetAPIServer().Path = filepath.Join(bin, "kube-apiserver")
	env.ControlPlane.KubectlPath = filepath.Join(bin, "kubectl")
	if webhooks {
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{Paths: []string{filepath.Join(repoRoot, "manifests", "webhook")}}
	}
	return env
}

// AdminKubeconfig adds a cluster-admin user to a started environment and
// writes its kubeconfig into dir, for the real kubectl and ndp's processes.
func AdminKubeconfig(env *envtest.Environment, dir string) (string, error) {
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, kc, 0o600)
}

// FreePort is a TCP port free on loopback right now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Kubelet stands in for node's kubelet, which envtest has none of, in the
// one way the drain needs: pods on node that an eviction left Terminating
// are deleted at once, as the kubelet does once their containers stopped.
// It runs until ctx ends.
func Kubelet(ctx context.Context, c client.Client, node string) {
	for ctx.Err() == nil {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": node}); err == nil {
			for i := range pods.Items {
				if pods.Items[i].DeletionTimestamp != nil {
					_ = c.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0))
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// envtestBinaries are the binaries envtest starts from its assets.
var envtestBinaries = []string{"etcd", "kube-apiserver", "kubectl"}

// dieWithParent is a directory of the same binaries as assets, each run by
// util-linux's setpriv with a parent-death signal: envtest starts etcd and
// kube-apiserver with no such signal (it has no hook for one), so a test
// binary killed on its timeout left them running, holding ports and CPU.
// The wrappers are written once into assets (bin/, build output),
// atomically, as test packages start at once. Without setpriv, or where the
// wrappers cannot be written, it is assets itself.
func dieWithParent(assets string) string {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return assets
	}
	dir := filepath.Join(assets, ".die-with-parent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return assets
	}
	for _, b := range envtestBinaries {
		script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- %s \"$@\"\n", setpriv, filepath.Join(assets, b))
		path := filepath.Join(dir, b)
		if cur, err := os.ReadFile(path); err == nil && string(cur) == script {
			continue
		}
		tmp, err := os.CreateTemp(dir, b+".*")
		if err != nil {
			return assets
		}
		_, werr := tmp.WriteString(script)
		cerr := tmp.Close()
		if werr != nil || cerr != nil || os.Chmod(tmp.Name(), 0o755) != nil || os.Rename(tmp.Name(), path) != nil {
			_ = os.Remove(tmp.Name())
			return assets
		}
	}
	return dir
}
