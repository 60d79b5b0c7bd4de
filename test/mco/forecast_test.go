package mco

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/controllers"
	advisorctrl "github.com/ndp-dev/ndp/controllers/advisor"
	"github.com/ndp-dev/ndp/internal/controlplane"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner/engine"
)

// forecastPlane is the MCO's API server and controllers (startMCO) with
// ndp's own CRDs, for ndp's advisor beside them.
type forecastPlane struct {
	mco        *MCO
	cfg        *rest.Config
	c          client.Client
	kubeconfig string
}

func startForecastPlane(t *testing.T) *forecastPlane {
	t.Helper()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	m := startMCO(t)
	if _, err := envtest.InstallCRDs(m.Config, envtest.CRDInstallOptions{Paths: []string{
		"../../manifests/crds/ndp.dev_nodedisruptionpolicies.yaml", "../../manifests/crds/ndp.dev_updateforecasts.yaml", "../../manifests/crds/ndp.dev_nodehistories.yaml",
	}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("installing ndp's CRDs: %v", err)
	}
	return &forecastPlane{mco: m, cfg: m.Config, c: m.Client, kubeconfig: m.Kubeconfig}
}

// startAdvisor runs ndp-controller's advisor wiring in this process
// against p; the returned function stops it, as a killed process.
func (p *forecastPlane) startAdvisor(t *testing.T) (stop func()) {
	t.Helper()
	// ndp-controller --mode=advisor's options.
	mgr, err := ctrl.NewManager(p.cfg, ctrl.Options{
		NewClient:  advisorctrl.NewAdvisorClient,
		Scheme:     scheme.New(),
		Client:     controllers.ClientOptions(),
		Cache:      controllers.CacheOptions(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controllers.SetupAdvisorWithManager(mgr, engine.Options{}, controllers.Options{RetryRejected: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-errs; err != nil {
			t.Errorf("the advisor's manager: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func (p *forecastPlane) pool(t *testing.T, name string) *mcfgv1.MachineConfigPool {
	t.Helper()
	var pool mcfgv1.MachineConfigPool
	if err := p.c.Get(context.Background(), client.ObjectKey{Name: name}, &pool); err != nil {
		t.Fatal(err)
	}
	return &pool
}

// forecast reads one forecast; nil when there is none.
func (p *forecastPlane) forecast(t *testing.T, name string) *v1alpha1.UpdateForecast {
	t.Helper()
	var f v1alpha1.UpdateForecast
	if err := p.c.Get(context.Background(), client.ObjectKey{Name: name}, &f); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return &f
}

// setPolicyStatus plays the MCO's operator: MachineConfiguration cluster's
// status gets the policies merged from spec, observed at generation.
func (p *forecastPlane) setPolicyStatus(t *testing.T, spec operatorv1.NodeDisruptionPolicyConfig, generation int64) {
	t.Helper()
	ctx := context.Background()
	var mc operatorv1.MachineConfiguration
	if err := p.c.Get(ctx, client.ObjectKey{Name: "cluster"}, &mc); err != nil {
		t.Fatal(err)
	}
	mc.Status.ObservedGeneration = generation
	mc.Status.NodeDisruptionPolicyStatus = operatorv1.NodeDisruptionPolicyStatus{ClusterPolicies: mcorules.MergePolicies(spec)}
	if err := p.c.Status().Update(ctx, &mc); err != nil {
		t.Fatalf("writing MachineConfiguration cluster's status: %v", err)
	}
}

func forecastSummary(f *v1alpha1.UpdateForecast) string {
	if f == nil {
		return "no forecast"
	}
	s := fmt.Sprintf("%s -> %s, state %s, nodes %v", f.Spec.From, f.Spec.To, f.Status.State, f.Status.Nodes)
	if f.Status.MCO != nil {
		s += fmt.Sprintf(", MCO %q (%+v)", f.Status.MCO.Summary, f.Status.MCO.PolicySource)
	}
	if f.Status.NDP != nil {
		s += fmt.Sprintf(", ndp %q", f.Status.NDP.Summary)
	}
	for _, c := range f.Status.Conditions {
		s += fmt.Sprintf(", %s=%s/%s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return s
}

// TestForecastBesideTheMCO runs ndp's advisor beside the MCO's own render
// and node controllers: a chrony MachineConfig gets a forecast before the
// MCO renders it (the MCO paused meanwhile), naming the rendered config the MCO then creates, with
// the MCO's decision and ndp's plan; the MCO's policies (current, then
// stale) change it; a restarted advisor rebuilds it; the nodes' move
// completes it.
func TestForecastBesideTheMCO(t *testing.T) {
	t.Parallel() // each starts its own API server and controllers; most of its time is the MCO's render delay
	ctx := context.Background()
	p := startForecastPlane(t)

	// The MCO renders the worker pool's first config.
	var r1 string
	testkit.Eventually(t, "the MCO's first rendered config of pool worker", func() (bool, string) {
		r1 = p.pool(t, "worker").Spec.Configuration.Name
		return r1 != "", ""
	})
	// The operator's policy status, current: the MCO's defaults.
	p.setPolicyStatus(t, operatorv1.NodeDisruptionPolicyConfig{}, 1)
	// Two worker nodes, Ready and done on that config, as the MCO's daemon
	// leaves them.
	workers := []string{"worker-a", "worker-b"}
	for _, name := range workers {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
			Annotations: map[string]string{ndpmcv1.CurrentConfigAnnotation: r1, ndpmcv1.DesiredConfigAnnotation: r1, ndpmcv1.StateAnnotation: ndpmcv1.StateDone}}}
		if err := p.c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if err := p.c.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}

	stop := p.startAdvisor(t)
	// ndp's own policy for chrony, beside the default.
	restart := operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: "chronyd.service"}}
	chronyNDP := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "chrony"},
		Spec: v1alpha1.NodeDisruptionPolicySpec{Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{restart}}}}}
	if err := p.c.Create(ctx, chronyNDP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "NodeDisruptionPolicy chrony accepted", func() (bool, string) {
		var got v1alpha1.NodeDisruptionPolicy
		if err := p.c.Get(ctx, client.ObjectKey{Name: "chrony"}, &got); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionActive), fmt.Sprint(got.Status.Conditions)
	})
	var list v1alpha1.UpdateForecastList
	if err := p.c.List(ctx, &list); err != nil || len(list.Items) != 0 {
		t.Fatalf("forecasts with nothing pending: %v %+v", err, list.Items)
	}

	// The change, while the MCO's controllers are paused: the forecast
	// then comes before the MCO renders, as it does on a cluster where the
	// MCO's render delay leaves it the time (on a loaded test machine, the
	// delay alone would make it a race).
	resume := p.mco.Pause(t)
	chrony := builder.MachineConfig("99-worker-chrony").WithRole("worker").WithFile("/etc/chrony.conf", "pool 2.rhel.pool.ntp.org iburst\n").Build()
	if err := p.c.Create(ctx, chrony); err != nil {
		t.Fatal(err)
	}
	var f *v1alpha1.UpdateForecast
	testkit.Eventually(t, "a forecast of pool worker from "+r1, func() (bool, string) {
		var list v1alpha1.UpdateForecastList
		if err := p.c.List(ctx, &list); err != nil {
			return false, err.Error()
		}
		for i := range list.Items {
			if list.Items[i].Spec.From == r1 && list.Items[i].Spec.To != r1 && list.Items[i].Status.State != "" {
				f = &list.Items[i]
				return true, ""
			}
		}
		return false, fmt.Sprint(len(list.Items), " forecasts")
	})
	to := f.Spec.To
	if f.Name != advisorctrl.ForecastName("worker", r1, to) || f.Spec.Pool != "worker" || f.Status.ToSource != "predicted" {
		t.Errorf("forecast %s: %+v, toSource %q; want named by the pair and predicted", f.Name, f.Spec, f.Status.ToSource)
	}
	resume()
	// The prediction is the rendered config the MCO creates.
	testkit.Eventually(t, "the MCO renders the chrony change to "+to, func() (bool, string) {
		got := p.pool(t, "worker").Spec.Configuration.Name
		return got != r1, got
	})
	if got := p.pool(t, "worker").Spec.Configuration.Name; got != to {
		t.Errorf("the MCO rendered %s; the forecast predicted %s", got, to)
	}

	name := advisorctrl.ForecastName("worker", r1, to)
	wait := func(what string, ok func(f *v1alpha1.UpdateForecast) bool) *v1alpha1.UpdateForecast {
		t.Helper()
		var f *v1alpha1.UpdateForecast
		testkit.Eventually(t, what, func() (bool, string) {
			f = p.forecast(t, name)
			return f != nil && ok(f), forecastSummary(f)
		})
		return f
	}
	mcoRule := func(f *v1alpha1.UpdateForecast, path string) *v1alpha1.MCORule {
		for i, r := range f.Status.MCO.Rules {
			if strings.Contains(r.Change, path) {
				return &f.Status.MCO.Rules[i]
			}
		}
		return nil
	}
	ready := func(f *v1alpha1.UpdateForecast) bool {
		return meta.IsStatusConditionTrue(f.Status.Conditions, v1alpha1.ForecastConditionReady) && f.Status.MCO != nil && f.Status.NDP != nil
	}

	// The MCO with its defaults: /etc/chrony.conf has no policy, so drain
	// and reboot; ndp's chrony policy restarts chronyd.
	f = wait("the forecast: the MCO drains and reboots, ndp restarts chronyd", func(f *v1alpha1.UpdateForecast) bool {
		return ready(f) && f.Status.NodeCount == 2
	})
	m := f.Status.MCO
	if !m.Drain || !m.Reboot || m.Summary != "drain, Reboot" || m.PolicySource == nil || m.PolicySource.From != "status" || m.PolicySource.Stale {
		t.Errorf("the MCO's decision: %+v", m)
	}
	if r := mcoRule(f, "/etc/chrony.conf"); r == nil || r.Rule != "no node disruption policy" || len(r.Actions) != 1 || r.Actions[0].Type != "Reboot" {
		t.Errorf("the MCO's rule for /etc/chrony.conf: %+v (rules %+v)", r, m.Rules)
	}
	n := f.Status.NDP
	if n.Drain || n.Reboot || n.Summary != "Restart chronyd.service" || len(n.Rules) != 1 || n.Rules[0].Policy != "chrony" || n.Rules[0].Match != "/etc/chrony.conf" {
		t.Errorf("ndp's plan: %+v", n)
	}
	if strings.Join(f.Status.Nodes, ",") != "worker-a,worker-b" || f.Status.State != v1alpha1.ForecastPending || f.Status.SingleNode {
		t.Errorf("nodes %v state %s single %t", f.Status.Nodes, f.Status.State, f.Status.SingleNode)
	}

	// The operator's status gains a chrony policy, current: the MCO restarts chronyd.
	chronyPolicy := operatorv1.NodeDisruptionPolicyConfig{Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{restart}}},
		SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}}}
	p.setPolicyStatus(t, chronyPolicy, 1)
	f = wait("the MCO restarts chronyd", func(f *v1alpha1.UpdateForecast) bool {
		return ready(f) && f.Status.MCO.Summary == "Restart chronyd.service"
	})
	if m := f.Status.MCO; m.Drain || m.Reboot || m.PolicySource.From != "status" || m.PolicySource.Stale || m.PolicySource.ObservedGeneration != 1 {
		t.Errorf("with a current chrony policy, the MCO's decision: %+v %+v", m, m.PolicySource)
	}
	if r := mcoRule(f, "/etc/chrony.conf"); r == nil || !strings.Contains(r.Rule, "/etc/chrony.conf") || len(r.Actions) != 1 || r.Actions[0].Service != "chronyd.service" {
		t.Errorf("the MCO's rule for /etc/chrony.conf: %+v", r)
	}

	// The spec moves on (generation 2) and the operator has not caught
	// up: the forecast says it is stale.
	var mc operatorv1.MachineConfiguration
	if err := p.c.Get(ctx, client.ObjectKey{Name: "cluster"}, &mc); err != nil {
		t.Fatal(err)
	}
	mc.Spec.NodeDisruptionPolicy = chronyPolicy
	if err := p.c.Update(ctx, &mc); err != nil {
		t.Fatal(err)
	}
	f = wait("the forecast marked stale", func(f *v1alpha1.UpdateForecast) bool {
		return f.Status.MCO != nil && f.Status.MCO.PolicySource != nil && f.Status.MCO.PolicySource.Stale
	})
	if src := f.Status.MCO.PolicySource; src.From != "spec" || src.Generation != mc.Generation || src.ObservedGeneration != 1 {
		t.Errorf("stale policy source %+v, want spec, generation %d observed 1", src, mc.Generation)
	}
	if c := meta.FindStatusCondition(f.Status.Conditions, v1alpha1.ForecastConditionMCOPredicted); c == nil || c.Reason != "PredictedFromSpec" {
		t.Errorf("MCOPredicted %+v", c)
	}
	if f.Status.MCO.Summary != "Restart chronyd.service" {
		t.Errorf("from the spec merged with the defaults, the MCO %q; want the spec's chrony restart", f.Status.MCO.Summary)
	}

	// A restarted advisor rebuilds the forecast from the API server alone.
	// The MCO's node controller sends a worker a few seconds after its
	// render, whenever that falls: the forecast compared is the one that
	// has observed it, or the restart would race the MCO's rollout.
	before := wait("the forecast observes the worker the MCO sends", func(f *v1alpha1.UpdateForecast) bool {
		return ready(f) && f.Status.Observed != nil && f.Status.Observed.InProgress == 1 &&
			f.Status.MCO.PolicySource != nil && f.Status.MCO.PolicySource.Stale
	})
	stop()
	if err := p.c.Delete(ctx, f); err != nil {
		t.Fatal(err)
	}
	p.startAdvisor(t)
	f = wait("the restarted advisor's forecast", func(f *v1alpha1.UpdateForecast) bool {
		return ready(f) && f.UID != before.UID
	})
	clearTimes := func(s v1alpha1.UpdateForecastStatus) v1alpha1.UpdateForecastStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		return s
	}
	if f.Spec != before.Spec || !equality.Semantic.DeepEqual(clearTimes(f.Status), clearTimes(before.Status)) {
		t.Errorf("after a restart:\n%s\nbefore:\n%s", forecastSummary(f), forecastSummary(before))
	}

	// The nodes move (playing the MCO's daemon): the forecast follows
	// them, and is completed when the last has moved, keeping the nodes
	// it last had.
	for i, name := range workers {
		var n corev1.Node
		if err := p.c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			t.Fatal(err)
		}
		n.Annotations[ndpmcv1.CurrentConfigAnnotation], n.Annotations[ndpmcv1.DesiredConfigAnnotation] = to, to
		if err := p.c.Update(ctx, &n); err != nil {
			t.Fatal(err)
		}
		if i < len(workers)-1 {
			left := strings.Join(workers[i+1:], ",")
			wait("the forecast left with "+left, func(f *v1alpha1.UpdateForecast) bool {
				return f.Status.State == v1alpha1.ForecastPending && strings.Join(f.Status.Nodes, ",") == left
			})
		}
	}
	f = wait("the forecast completed", func(f *v1alpha1.UpdateForecast) bool { return f.Status.State == v1alpha1.ForecastCompleted })
	if f.Status.NodeCount != 1 || f.Status.Nodes[0] != workers[len(workers)-1] || meta.IsStatusConditionTrue(f.Status.Conditions, v1alpha1.ForecastConditionCurrent) {
		t.Errorf("completed forecast: %s", forecastSummary(f))
	}
	if err := p.c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	for _, f := range list.Items {
		if f.Status.State == v1alpha1.ForecastPending {
			t.Errorf("a pending forecast after every node moved: %s", forecastSummary(&f))
		}
	}

	// kubectl shows it.
	bin, err := controlplane.Assets("../..", "kubectl")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bin, "kubectl"), "--kubeconfig", p.kubeconfig, "get", "updateforecasts", "-o", "wide").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "MCO ACTIONS") || !strings.Contains(string(out), "NDP ACTIONS") || !strings.Contains(string(out), name) {
		t.Errorf("kubectl get updateforecasts -o wide: %v\n%s", err, out)
	}
}
