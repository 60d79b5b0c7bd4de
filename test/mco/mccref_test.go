// Package mco tests ndp against the Machine Config Operator's own
// controllers: mcc-ref (../shared/mco-ref), the MCO's template,
// kubelet-config, container-runtime-config, render and node controllers
// built from its source, run against a real kube-apiserver. startMCO is the
// harness; the tests beside it compare what ndp foretells with what the
// MCO does.
package mco

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/internal/output"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// MCO is a kube-apiserver with the MCO's controllers running against it,
// after `mcc-ref setup` (openshift/api CRDs, ControllerConfig, FeatureGate,
// the master and worker pools...).
type MCO struct {
	// Kubeconfig is an admin kubeconfig of the API server.
	Kubeconfig string
	Config     *rest.Config
	// Client reads and writes with ndp's scheme (ndp's MachineConfig type,
	// openshift/api's pools) plus the ControllerConfig.
	Client client.WithWatch
	// Dir holds the reference tools (mcc-ref, mco-decide, templates/).
	Dir string
	// Logs is what the controllers printed so far.
	Logs *output.Buffer
}

// RefDir is the directory of the MCO reference tools: $NDP_MCO_REF, or
// ../shared/mco-ref beside the repository, or /work/shared/mco-ref (a git
// worktree lives elsewhere); "" when none holds mcc-ref.
func RefDir() string {
	candidates := []string{os.Getenv("NDP_MCO_REF"), filepath.Join("..", "..", "..", "shared", "mco-ref"), "/work/shared/mco-ref"}
	for _, dir := range candidates {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "mcc-ref")); err == nil {
			abs, err := filepath.Abs(dir)
			if err == nil {
				return abs
			}
		}
	}
	return ""
}

// Scheme is ndp's scheme with the ControllerConfig, which ndp itself does
// not read.
func Scheme() *runtime.Scheme {
	s := scheme.New()
	s.AddKnownTypes(mcfgv1.GroupVersion, &mcfgv1.ControllerConfig{}, &mcfgv1.ControllerConfigList{})
	return s
}

// startMCO starts a control plane (KUBEBUILDER_ASSETS, or bin/), runs
// `mcc-ref setup` and the MCO's controllers, and waits for the master and
// worker pools' first rendered configs. Everything stops when t ends (the
// controllers with SIGTERM); their logs go to t.Log if t failed. It skips t
// when the reference tools are absent.
func startMCO(t *testing.T) *MCO {
	t.Helper()
	dir := RefDir()
	if dir == "" {
		t.Skip("the MCO reference tools are absent (no mcc-ref in $NDP_MCO_REF, ../shared/mco-ref or /work/shared/mco-ref): these tests compare ndp with the MCO's own controllers")
	}
	cp := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "../..", NoCRDs: true, Kubeconfig: true})
	cfg := rest.CopyConfig(cp.Config)
	cfg.WarningHandlerWithContext = warningLog{t}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	m := &MCO{Kubeconfig: cp.Kubeconfig, Config: cfg, Client: c, Dir: dir, Logs: &output.Buffer{}}

	setup := exec.Command(filepath.Join(dir, "mcc-ref"), "setup", "--kubeconfig", m.Kubeconfig)
	if out, err := setup.CombinedOutput(); err != nil {
		t.Fatalf("mcc-ref setup: %v\n%s", err, out)
	}

	run := exec.Command(filepath.Join(dir, "mcc-ref"), "--kubeconfig", m.Kubeconfig, "--templates", filepath.Join(dir, "templates"))
	run.Stdout, run.Stderr = m.Logs, m.Logs
	if err := run.Start(); err != nil {
		t.Fatalf("starting mcc-ref: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = run.Wait(); close(done) }()
	// Registered after the control plane's cleanup, so it runs first: the
	// controllers stop before their API server does.
	t.Cleanup(func() {
		testkit.Terminate(run.Process, done, 30*time.Second)
		if t.Failed() {
			t.Logf("mcc-ref's last lines:\n%s", testkit.LastLines(m.Logs.String(), 80))
		}
	})
	for _, pool := range []string{"master", "worker"} {
		m.WaitRendered(t, pool, nil)
	}
	return m
}

// WaitRendered waits until the MCO has rendered pool from exactly the
// MachineConfigs its selector selects now (its spec.configuration.source
// names them all; with want, exactly those), and returns the pool.
func (m *MCO) WaitRendered(t *testing.T, pool string, want []string) *mcfgv1.MachineConfigPool {
	t.Helper()
	var got mcfgv1.MachineConfigPool
	testkit.Eventually(t, fmt.Sprintf("the MCO renders pool %s from its MachineConfigs", pool), func() (bool, string) {
		if err := m.Client.Get(context.Background(), client.ObjectKey{Name: pool}, &got); err != nil {
			return false, err.Error()
		}
		expect := want
		if expect == nil {
			names, err := m.Selected(&got)
			if err != nil {
				return false, err.Error()
			}
			expect = names
		}
		var source []string
		for _, ref := range got.Spec.Configuration.Source {
			source = append(source, ref.Name)
		}
		if got.Spec.Configuration.Name == "" || !sameSet(source, expect) {
			return false, fmt.Sprintf("configuration %q from %v, want from %v", got.Spec.Configuration.Name, source, expect)
		}
		return true, ""
	}, testkit.Within(3*time.Minute))
	return &got
}

// Selected is the names of the MachineConfigs pool's machineConfigSelector
// selects, rendered ones aside (the MCO's render controller reads the same).
func (m *MCO) Selected(pool *mcfgv1.MachineConfigPool) ([]string, error) {
	mcs, err := m.SourcesOf(pool)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(mcs))
	for i, mc := range mcs {
		names[i] = mc.Name
	}
	return names, nil
}

// SourcesOf is the MachineConfigs pool's machineConfigSelector selects,
// by name: what the MCO's render controller merges (a rendered config has
// no role label, so none is among them).
func (m *MCO) SourcesOf(pool *mcfgv1.MachineConfigPool) ([]ndpmcv1.MachineConfig, error) {
	sel, err := metav1.LabelSelectorAsSelector(pool.Spec.MachineConfigSelector)
	if err != nil {
		return nil, fmt.Errorf("MachineConfigPool %s: spec.machineConfigSelector: %w", pool.Name, err)
	}
	var list ndpmcv1.MachineConfigList
	if err := m.Client.List(context.Background(), &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the MachineConfigs of pool %s: %w", pool.Name, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// ControllerConfig is the cluster's ControllerConfig.
func (m *MCO) ControllerConfig(t *testing.T) *mcfgv1.ControllerConfig {
	t.Helper()
	var cc mcfgv1.ControllerConfig
	if err := m.Client.Get(context.Background(), client.ObjectKey{Name: "machine-config-controller"}, &cc); err != nil {
		t.Fatalf("reading the ControllerConfig: %v", err)
	}
	return &cc
}

// warningLog logs the API server's warnings to the test that started it.
type warningLog struct{ t *testing.T }

func (w warningLog) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.t.Logf("API server warning: %s", text)
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		if seen[x] == 0 {
			return false
		}
		seen[x]--
	}
	return true
}
