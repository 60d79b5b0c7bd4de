// Package mco tests ndp against the Machine Config Operator's own
// controllers: mcc-ref (../shared/mco-ref), the MCO's template,
// kubelet-config, container-runtime-config, render and node controllers
// built from its source, run against a real kube-apiserver. startMCO is the
// harness; the tests beside it compare what ndp foretells with what the
// MCO does.
package mco

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/internal/output"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/mco/mcorules"
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
	// Kubectl is kubectl's path, with mcoOptions.Kubectl.
	Kubectl string

	controllers *os.Process
}

// Pause stops the MCO's controllers (SIGSTOP) until the returned function
// resumes them: what the test does meanwhile comes first, whatever the
// machine's load, where the MCO's render delay alone would make it a race.
func (m *MCO) Pause(t *testing.T) (resume func()) {
	t.Helper()
	if err := m.controllers.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("pausing mcc-ref: %v", err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := m.controllers.Signal(syscall.SIGCONT); err != nil {
				t.Errorf("resuming mcc-ref: %v", err)
			}
		})
	}
	t.Cleanup(resume) // a stopped process would not end on SIGTERM
	return resume
}

// refDir is the directory of the MCO reference tools (mcc-ref,
// mco-decide, templates/): without them t skips, or fails with
// NDP_REQUIRE_MCO_REF=1 (testkit.RequireMCORef).
func refDir(t testing.TB) string {
	t.Helper()
	return filepath.Dir(testkit.RequireMCORef(t, "mcc-ref"))
}

// TestMain: every test here runs the MCO's own controllers (mcc-ref).
// Without them the package fails at once where NDP_REQUIRE_MCO_REF=1 (CI
// sets it), and says why its tests skip otherwise.
func TestMain(m *testing.M) {
	if _, err := testkit.LookupMCORef("mcc-ref"); err != nil {
		if testkit.MCORefRequired() {
			fmt.Fprintf(os.Stderr, "FAIL: test/mco runs the MCO's own controllers: %v, and %s=1 requires it\n", err, testkit.RequireMCORefEnv)
			os.Exit(1)
		}
		fmt.Printf("test/mco runs the MCO's own controllers: %v: every test skips\n", err)
	}
	os.Exit(m.Run())
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
// controllers with SIGTERM); their logs go to t.Log if t failed. Without
// the reference tools t skips, or fails (refDir).
func startMCO(t *testing.T) *MCO {
	t.Helper()
	return startMCOWith(t, mcoOptions{})
}

// mcoOptions changes the control plane startMCOWith starts.
type mcoOptions struct {
	// Configure changes the environment before it starts (the API
	// server's flags, e.g. an audit log).
	Configure func(*envtest.Environment)
	// AsMCOAccount runs the controllers as the MCO's controller does, as
	// the service account machine-config-controller in
	// openshift-machine-config-operator (bound to cluster-admin here),
	// not as the administrator: what admission sees of the MCO's writes is
	// then what it sees on OpenShift.
	AsMCOAccount bool
	// Controllers are the MCO's controllers mcc-ref runs (its
	// --controllers); nil runs them all. Without "template", nothing marks
	// the ControllerConfig completed, which the render controller waits
	// for: startMCOWith writes that status itself, as the template
	// controller would.
	Controllers []string
	// SetupArgs are added to `mcc-ref setup` (e.g. --installer-mcs=false).
	SetupArgs []string
	// BeforeControllers runs after setup, before the controllers start
	// (to create a cluster's MachineConfigs they then find in place).
	BeforeControllers func(t *testing.T, m *MCO)
	// Kubectl starts the control plane with kubectl (MCO.Kubectl).
	Kubectl bool
}

// The MCO's controller's service account.
const (
	MCONamespace = "openshift-machine-config-operator"
	MCOAccount   = "machine-config-controller"
)

// startMCOWith is startMCO on a control plane configured by o.
func startMCOWith(t *testing.T, o mcoOptions) *MCO {
	t.Helper()
	dir := refDir(t)
	var bins []string
	if o.Kubectl {
		bins = []string{"kubectl"}
	}
	cp := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "../..", NoCRDs: true, Kubeconfig: true, Configure: o.Configure, Binaries: bins})
	cfg := rest.CopyConfig(cp.Config)
	cfg.WarningHandlerWithContext = warningLog{t}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	m := &MCO{Kubeconfig: cp.Kubeconfig, Config: cfg, Client: c, Dir: dir, Logs: &output.Buffer{}}
	if o.Kubectl {
		m.Kubectl = cp.Bin("kubectl")
	}

	setup := exec.Command(filepath.Join(dir, "mcc-ref"), append([]string{"setup", "--kubeconfig", m.Kubeconfig}, o.SetupArgs...)...)
	if out, err := setup.CombinedOutput(); err != nil {
		t.Fatalf("mcc-ref setup: %v\n%s", err, out)
	}
	if o.Controllers != nil && !slices.Contains(o.Controllers, "template") {
		m.completeControllerConfig(t)
	}
	if o.BeforeControllers != nil {
		o.BeforeControllers(t, m)
	}

	controllers := m.Kubeconfig
	if o.AsMCOAccount {
		controllers = m.mcoAccountKubeconfig(t)
	}
	args := []string{"--kubeconfig", controllers, "--templates", filepath.Join(dir, "templates")}
	if o.Controllers != nil {
		args = append(args, "--controllers", strings.Join(o.Controllers, ","))
	}
	run := exec.Command(filepath.Join(dir, "mcc-ref"), args...)
	run.Stdout, run.Stderr = m.Logs, m.Logs
	if err := run.Start(); err != nil {
		t.Fatalf("starting mcc-ref: %v", err)
	}
	m.controllers = run.Process
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

// playOperator writes MachineConfiguration cluster's status as the MCO's
// operator does (which mcc-ref does not run): the spec's policies merged
// with the MCO's defaults, at the current generation. The test does, as
// an administrator; ndp only reads it.
func (m *MCO) playOperator(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var mc operatorv1.MachineConfiguration
	if err := m.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, &mc); err != nil {
		t.Fatalf("reading MachineConfiguration cluster: %v", err)
	}
	mc.Status.ObservedGeneration = mc.Generation
	mc.Status.NodeDisruptionPolicyStatus.ClusterPolicies = mcorules.MergePolicies(mc.Spec.NodeDisruptionPolicy)
	if err := m.Client.Status().Update(ctx, &mc); err != nil {
		t.Fatalf("writing MachineConfiguration cluster's status: %v", err)
	}
}

// completeControllerConfig writes the ControllerConfig's status as the
// MCO's template controller does once it has rendered the templates
// (observedGeneration current, TemplateControllerCompleted): the render
// controller renders nothing before.
func (m *MCO) completeControllerConfig(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var cc mcfgv1.ControllerConfig
	if err := m.Client.Get(ctx, client.ObjectKey{Name: "machine-config-controller"}, &cc); err != nil {
		t.Fatalf("reading the ControllerConfig: %v", err)
	}
	now := metav1.Now()
	cond := func(typ mcfgv1.ControllerConfigStatusConditionType, status corev1.ConditionStatus) mcfgv1.ControllerConfigStatusCondition {
		return mcfgv1.ControllerConfigStatusCondition{Type: typ, Status: status, LastTransitionTime: now, Message: "written by the test in the template controller's place"}
	}
	cc.Status.ObservedGeneration = cc.Generation
	cc.Status.Conditions = []mcfgv1.ControllerConfigStatusCondition{
		cond(mcfgv1.TemplateControllerCompleted, corev1.ConditionTrue),
		cond(mcfgv1.TemplateControllerRunning, corev1.ConditionFalse),
		cond(mcfgv1.TemplateControllerFailing, corev1.ConditionFalse),
	}
	if err := m.Client.Status().Update(ctx, &cc); err != nil {
		t.Fatalf("writing the ControllerConfig's status: %v", err)
	}
}

// mcoAccountKubeconfig creates the MCO controller's service account, binds
// it to cluster-admin, and returns a kubeconfig with its token once the
// binding is in force.
func (m *MCO) mcoAccountKubeconfig(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: MCONamespace, Name: MCOAccount}}
	if err := m.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the MCO's service account: %v", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mcc-ref-" + MCOAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: MCONamespace, Name: MCOAccount}},
	}
	if err := m.Client.Create(ctx, binding); err != nil {
		t.Fatalf("binding the MCO's service account: %v", err)
	}
	kc, cfg := m.tokenKubeconfig(t, MCONamespace, MCOAccount)
	as, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// The API server loads bindings asynchronously.
	testkit.Eventually(t, "the MCO's service account bound to cluster-admin", func() (bool, string) {
		err := as.List(ctx, &mcfgv1.MachineConfigPoolList{})
		return err == nil, fmt.Sprint(err)
	})
	return kc
}

// tokenKubeconfig writes a kubeconfig that authenticates as a service
// account with a token, as a pod's projected volume holds it, and returns
// its path and the same as a rest.Config.
func (m *MCO) tokenKubeconfig(t *testing.T, namespace, name string) (string, *rest.Config) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(m.Config)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s/%s: %v", namespace, name, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: m.Config.Host, CertificateAuthorityData: m.Config.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig-"+namespace+"-"+name)
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(m.Config)
	cfg.BearerToken = tok.Status.Token
	return path, cfg
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

// mcoVerdict is mco-decide's answer.
type mcoVerdict struct{ testkit.MCODecision }

// mcoDecide runs the MCO's own daemon code (mco-decide in refDir) on two
// rendered configs of the cluster, with MachineConfiguration cluster, dumped
// to files.
func mcoDecide(t *testing.T, c client.Client, refDir, from, to string) mcoVerdict {
	t.Helper()
	mc := dumpObject(t, c, t.TempDir(), &operatorv1.MachineConfiguration{TypeMeta: metav1.TypeMeta{APIVersion: operatorv1.GroupVersion.String(), Kind: "MachineConfiguration"}}, "cluster")
	return mcoDecideWith(t, c, refDir, from, to, mc)
}

// dumpObject reads the cluster-scoped object name into obj and writes it,
// without its managedFields, as JSON in dir; it returns the file's path.
func dumpObject(t *testing.T, c client.Client, dir string, obj client.Object, name string) string {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, obj); err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	obj.SetManagedFields(nil)
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mcoDecideWith runs mco-decide on two rendered configs of the cluster
// with the MachineConfiguration in the file machineConfiguration (its
// spec.nodeDisruptionPolicy merged with the MCO's defaults).
func mcoDecideWith(t *testing.T, c client.Client, refDir, from, to, machineConfiguration string) mcoVerdict {
	t.Helper()
	dir := t.TempDir()
	mcType := metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfig"}
	return mcoVerdict{testkit.MCODecide(t, filepath.Join(refDir, "mco-decide"),
		dumpObject(t, c, dir, &ndpmcv1.MachineConfig{TypeMeta: mcType}, from),
		dumpObject(t, c, dir, &ndpmcv1.MachineConfig{TypeMeta: mcType}, to),
		machineConfiguration)}
}

// says is mco-decide's answer in the advisor's words: "drain and reboot",
// "reload crio.service, no drain"...
func (d mcoVerdict) says() string {
	var acts []string
	for _, a := range d.Actions {
		var s string
		switch a.Type {
		case "Restart", "Reload":
			s = strings.ToLower(a.Type) + " " + a.Service
		case "Special":
			s = "reload crio.service" // the MCO's registries.conf action
		case "DaemonReload":
			s = "daemon-reload"
		}
		if s != "" && !slices.Contains(acts, s) {
			acts = append(acts, s)
		}
	}
	switch {
	case !d.Reconcilable:
		return "refused ("
	case d.Reboot && d.Drain:
		return "drain and reboot"
	case d.Reboot:
		return "reboot, no drain"
	case len(acts) == 0 && d.Drain:
		return "drain"
	case len(acts) == 0:
		return "nothing to do"
	case d.Drain:
		return strings.Join(acts, ", ") + " and drain"
	}
	return strings.Join(acts, ", ") + ", no drain"
}
