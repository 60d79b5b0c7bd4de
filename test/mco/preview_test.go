package mco

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	sigsyaml "sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/internal/controlplane"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/render"
	"github.com/ndp-dev/ndp/webhook"
	webhookadvisor "github.com/ndp-dev/ndp/webhook/advisor"
)

// advisorWebhooks is the advisor's webhook configuration as the test
// registers it: every preview, on dry-runs and real writes alike.
func advisorWebhooks() *admissionregistrationv1.ValidatingWebhookConfiguration {
	hook := func(name, path string, rules ...admissionregistrationv1.RuleWithOperations) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name:                    name,
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			TimeoutSeconds:          ptr.To[int32](10),
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "ndp-webhook", Namespace: "default", Path: ptr.To(path)}},
			Rules:                   rules,
		}
	}
	rule := func(group, version string, resources ...string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources, Scope: ptr.To(admissionregistrationv1.ClusterScope)},
		}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "ndp-advisor"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook("machineconfigs.preview.ndp.dev", webhook.MachineConfigPath, rule("machineconfiguration.openshift.io", "v1", "machineconfigs")),
			hook("generatedconfigs.preview.ndp.dev", webhook.GeneratedConfigsPath, rule("machineconfiguration.openshift.io", "v1", "kubeletconfigs", "containerruntimeconfigs")),
			hook("imagemirrors.preview.ndp.dev", webhook.ImageMirrorsPath, rule("config.openshift.io", "v1", "imagedigestmirrorsets", "imagetagmirrorsets"), rule("operator.openshift.io", "v1alpha1", "imagecontentsourcepolicies")),
			hook("imageconfig.preview.ndp.dev", webhook.ImageConfigPath, rule("config.openshift.io", "v1", "images")),
			hook("machineconfiguration.preview.ndp.dev", webhook.MachineConfigurationPath, rule("operator.openshift.io", "v1", "machineconfigurations")),
		},
	}
}

// advisor is the MCO's controllers with ndp's webhook in advisor mode
// beside them, and three worker nodes.
type advisor struct {
	*MCO
	kubectl string
	// dir holds the MCO's reference tools.
	dir string
	// previews carries the worker pool's advisor previews.
	previews chan *webhookadvisor.MCOPreview
}

// startAdvisor starts the MCO (startMCO), registers the advisor's
// webhooks, serves them from this process with ndp's active policies (the
// default and a chrony policy that restarts chronyd), plays the MCO's
// operator for MachineConfiguration cluster's status, and adds three
// worker nodes on the worker pool's rendered config.
func startAdvisor(t *testing.T) *advisor {
	t.Helper()
	m := startMCO(t)
	assets, err := controlplane.Assets("../..", "kubectl")
	if err != nil {
		t.Fatal(err)
	}
	a := &advisor{MCO: m, kubectl: filepath.Join(assets, "kubectl"), dir: m.Dir}
	ctx, cancel := context.WithCancel(context.Background())

	install := &envtest.WebhookInstallOptions{ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{advisorWebhooks()}}
	if err := install.Install(m.Config); err != nil {
		t.Fatalf("installing the webhook configuration: %v", err)
	}
	mgr, err := ctrl.NewManager(m.Config, ctrl.Options{
		Scheme:  scheme.New(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{
			Host: install.LocalServingHost, Port: install.LocalServingPort, CertDir: install.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	active := policyset.NewActivePolicies(engine.Options{})
	chrony := policytest.File("chrony", 100, "/etc/chrony.conf", policy.Action{Type: policy.ActionRestart, Restart: &operatorv1.RestartService{ServiceName: "chronyd.service"}})
	for _, p := range []policy.Policy{policy.DefaultPolicy(), chrony} {
		if err := active.Put(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	previewer, err := webhook.SetupAdvisorWithManager(mgr, active, webhook.Options{PreviewDeadline: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a.previews = make(chan *webhookadvisor.MCOPreview, 64)
	previewer.Observe = func(pp *webhookadvisor.MCOPreview) {
		if pp.Pool == "worker" {
			select {
			case a.previews <- pp:
			default:
			}
		}
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Log(err)
		}
		_ = install.Cleanup()
	})
	testkit.Until(t, "the webhook server serves", func() bool { return mgr.GetWebhookServer().StartedChecker()(nil) == nil }, testkit.Within(time.Minute))

	a.playOperator(t)
	worker := m.WaitRendered(t, "worker", nil)
	for i := range 3 {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("worker-%d", i),
			Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
			Annotations: map[string]string{
				ndpmcv1.CurrentConfigAnnotation: worker.Spec.Configuration.Name,
				ndpmcv1.DesiredConfigAnnotation: worker.Spec.Configuration.Name,
				ndpmcv1.StateAnnotation:         "Done",
			},
		}}
		if err := m.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// dryRun applies manifest with kubectl apply --dry-run=server and returns
// the warnings kubectl printed.
func (a *advisor) dryRun(t *testing.T, manifest string, verb ...string) []string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--kubeconfig", a.Kubeconfig}
	if len(verb) == 0 {
		verb = []string{"apply"}
	}
	args = append(append(args, verb...), "--dry-run=server", "-f", f)
	out, err := exec.Command(a.kubectl, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	var ws []string
	for _, l := range strings.Split(string(out), "\n") {
		if w, ok := strings.CutPrefix(l, "Warning: "); ok {
			ws = append(ws, w)
		}
	}
	t.Logf("kubectl %s --dry-run=server: %s", strings.Join(verb, " "), out)
	return ws
}

// apply applies manifest for real (or deletes with verb delete).
func (a *advisor) apply(t *testing.T, manifest string, verb ...string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if len(verb) == 0 {
		verb = []string{"apply"}
	}
	args := append(append([]string{"--kubeconfig", a.Kubeconfig}, verb...), "-f", f)
	if out, err := exec.Command(a.kubectl, args...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

// stored is the manifest's object as the API server stores it: its
// resourceVersion, or that it has none.
func (a *advisor) stored(t *testing.T, manifest string) string {
	t.Helper()
	var obj unstructured.Unstructured
	if err := sigsyaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	switch err := a.Client.Get(context.Background(), client.ObjectKeyFromObject(&obj), got); {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("%s %s: none", obj.GetKind(), obj.GetName())
	case err != nil:
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %s at resourceVersion %s", obj.GetKind(), obj.GetName(), got.GetResourceVersion())
}

// nodesOn is the worker nodes' current config; moveNodes plays the MCO's
// daemon: every worker now runs config.
func (a *advisor) nodesOn(t *testing.T) string {
	t.Helper()
	var n corev1.Node
	if err := a.Client.Get(context.Background(), client.ObjectKey{Name: "worker-0"}, &n); err != nil {
		t.Fatal(err)
	}
	return n.Annotations[ndpmcv1.CurrentConfigAnnotation]
}

func (a *advisor) moveNodes(t *testing.T, config string) {
	t.Helper()
	for i := range 3 {
		var n corev1.Node
		key := client.ObjectKey{Name: fmt.Sprintf("worker-%d", i)}
		if err := a.Client.Get(context.Background(), key, &n); err != nil {
			t.Fatal(err)
		}
		n.Annotations[ndpmcv1.CurrentConfigAnnotation] = config
		n.Annotations[ndpmcv1.DesiredConfigAnnotation] = config
		if err := a.Client.Update(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
	}
}

// waitNewRendered waits until the MCO renders the worker pool to a config
// other than old, and returns its name.
func (a *advisor) waitNewRendered(t *testing.T, old string) string {
	t.Helper()
	var name string
	testkit.Eventually(t, "the MCO renders pool worker anew", func() (bool, string) {
		pool := a.WaitRendered(t, "worker", nil)
		name = pool.Spec.Configuration.Name
		return name != old, name
	}, testkit.Within(3*time.Minute))
	return name
}

// checkWarning finds the worker pool's MCO warning and checks it says
// want; the rest of the warnings must fit the API server's limits.
func checkWarning(t *testing.T, ws []string, want string) string {
	t.Helper()
	total := 0
	for _, w := range ws {
		if !strings.HasPrefix(w, "MCO: ") && !strings.HasPrefix(w, "ndp: ") {
			continue // kubectl's own
		}
		total += len(w)
		if len(w) > webhookadvisor.MaxWarningBytes {
			t.Errorf("a warning of %d bytes: %q", len(w), w)
		}
	}
	if total > webhookadvisor.MaxWarningsBytes {
		t.Errorf("%d bytes of warnings", total)
	}
	for _, w := range ws {
		if strings.HasPrefix(w, "MCO: pool worker, 3 nodes: ") {
			if !strings.Contains(w, want) {
				t.Errorf("pool worker's warning %q does not say %q", w, want)
			}
			return w
		}
	}
	t.Errorf("no warning for pool worker in %q (want %q)", ws, want)
	return ""
}

// step is one change: its dry-run warns what the MCO's daemon (mco-decide)
// then decides for the config the MCO renders after the real apply.
func (a *advisor) step(t *testing.T, manifest string, verb string, want string) (warnings []string, from, to string) {
	t.Helper()
	from = a.nodesOn(t)
	for len(a.previews) > 0 {
		<-a.previews // the MCO's own writes, previewed too
	}
	before := a.stored(t, manifest)
	ws := a.dryRun(t, manifest, verb)
	var preview *webhookadvisor.MCOPreview
	select {
	case preview = <-a.previews:
	default:
		t.Fatal("the dry-run gave no preview of pool worker")
	}
	// A dry-run writes nothing: the object is as the API server had it
	// (its resourceVersion), so the MCO, which renders from what the API
	// server stores, has nothing new to render.
	if after := a.stored(t, manifest); after != before {
		t.Fatalf("the dry-run wrote: %s, before it %s", after, before)
	}
	if pool := a.WaitRendered(t, "worker", nil); pool.Spec.Configuration.Name != from {
		t.Fatalf("after the dry-run alone, the MCO rendered %s (from %s)", pool.Spec.Configuration.Name, from)
	}
	a.apply(t, manifest, verb)
	to = a.waitNewRendered(t, from)
	// The config the preview rendered is the one the MCO renders: same
	// spec, so same name (the name is the MCO's hash of the spec).
	if preview.Rendered != to {
		t.Errorf("the preview rendered %s, the MCO %s", preview.Rendered, to)
	}
	d := mcoDecide(t, a.Client, a.dir, from, to)
	if want != "" && d.says() != want {
		t.Errorf("premise: mco-decide says %q for %s -> %s, the test expects %q", d.says(), from, to, want)
	}
	checkWarning(t, ws, d.says())
	return ws, from, to
}

const chronyMC = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-worker-chrony
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - path: /etc/chrony.conf
        mode: 420
        overwrite: true
        contents: {source: "data:,pool%202.rhel.pool.ntp.org%20iburst%0A"}
`

const dirMC = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-worker-dir
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      directories:
      - path: /var/lib/example
        mode: 493
`

// notCreated checks that a dry-run left no MachineConfig name behind.
func (a *advisor) notCreated(t *testing.T, name string) {
	t.Helper()
	var mc ndpmcv1.MachineConfig
	if err := a.Client.Get(context.Background(), client.ObjectKey{Name: name}, &mc); !apierrors.IsNotFound(err) {
		t.Errorf("MachineConfig %s after a dry-run: %v", name, err)
	}
}

const kubeletConfig = `apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata: {name: max-pods}
spec:
  machineConfigPoolSelector:
    matchLabels: {pools.operator.machineconfiguration.openshift.io/worker: ""}
  kubeletConfig: {maxPods: 200}
`

const containerRuntimeConfig = `apiVersion: machineconfiguration.openshift.io/v1
kind: ContainerRuntimeConfig
metadata: {name: pids}
spec:
  machineConfigPoolSelector:
    matchLabels: {pools.operator.machineconfiguration.openshift.io/worker: ""}
  containerRuntimeConfig: {pidsLimit: 4096, logLevel: debug}
`

const idms = `apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata: {name: ubi}
spec:
  imageDigestMirrors:
  - source: registry.access.redhat.com/ubi9
    mirrors: [mirror.example.com/ubi9]
`

const itms = `apiVersion: config.openshift.io/v1
kind: ImageTagMirrorSet
metadata: {name: ubi-tags}
spec:
  imageTagMirrors:
  - source: registry.access.redhat.com/ubi9
    mirrors: [mirror.example.com/ubi9-tags]
`

const chronyPolicy = `apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata: {name: cluster}
spec:
  logLevel: Normal
  operatorLogLevel: Normal
  nodeDisruptionPolicy:
    files:
    - path: /etc/chrony.conf
      actions: [{type: Restart, restart: {serviceName: chronyd.service}}]
`

// TestAdvisorPreviewsWhatTheMCODoes dry-runs each change that moves a
// pool's rendered config with ndp's webhook in advisor mode beside the
// MCO's own controllers, then applies it for real: the warning says what
// the MCO's own daemon code (mco-decide) decides for the config the MCO
// then renders. Where the MCO's controllers generate a MachineConfig
// (KubeletConfig, image mirrors), ndp's rendering of it is compared with
// theirs.
func TestAdvisorPreviewsWhatTheMCODoes(t *testing.T) {
	t.Parallel() // each starts its own API server and controllers; most of its time is the MCO's render delay
	a := startAdvisor(t)

	t.Run("a chrony MachineConfig", func(t *testing.T) {
		ws, _, to := a.step(t, chronyMC, "apply", "drain and reboot")
		checkWarning(t, ws, "drain and reboot (file /etc/chrony.conf: no node disruption policy)")
		want := "ndp: pool worker: restart chronyd.service, no drain; for the MCO add spec.nodeDisruptionPolicy.files: [{path: /etc/chrony.conf, actions: [{type: Restart, restart: {serviceName: chronyd.service}}]}]"
		if !contains(ws, want) {
			t.Errorf("no %q in %q", want, ws)
		}
		// The pending update, decided again with a policy for chrony.conf.
		pws := a.dryRun(t, chronyPolicy)
		wantPending := "MCO: after this, pool worker's pending update (3 nodes) restarts chronyd.service instead of draining and rebooting"
		if !contains(pws, wantPending) {
			t.Errorf("MachineConfiguration edit: no %q in %q", wantPending, pws)
		}
		a.moveNodes(t, to)
	})

	t.Run("a new directory: the MCO refuses it", func(t *testing.T) {
		ws := a.dryRun(t, dirMC, "apply")
		checkWarning(t, ws, "refused (")
		checkWarning(t, ws, "the nodes go Unreconcilable")
		a.notCreated(t, "50-worker-dir")
	})

	t.Run("a KubeletConfig", func(t *testing.T) {
		_, _, to := a.step(t, kubeletConfig, "apply", "drain and reboot")
		a.sameGenerated(t, "99-worker-generated-kubelet", func(mcs []*ndpmcv1.MachineConfig) ([]byte, error) {
			var kc mcfgv1.KubeletConfig
			if err := a.Client.Get(context.Background(), client.ObjectKey{Name: "max-pods"}, &kc); err != nil {
				return nil, err
			}
			return render.KubeletConfigIgnition("worker", mcs, &kc)
		})
		a.moveNodes(t, to)
	})

	t.Run("a ContainerRuntimeConfig", func(t *testing.T) {
		_, _, to := a.step(t, containerRuntimeConfig, "apply", "drain and reboot")
		a.sameGenerated(t, "99-worker-generated-containerruntime", func(mcs []*ndpmcv1.MachineConfig) ([]byte, error) {
			var c mcfgv1.ContainerRuntimeConfig
			if err := a.Client.Get(context.Background(), client.ObjectKey{Name: "pids"}, &c); err != nil {
				return nil, err
			}
			return render.ContainerRuntimeConfigIgnition("worker", mcs, &c)
		})
		a.moveNodes(t, to)
	})

	t.Run("an ImageDigestMirrorSet added", func(t *testing.T) {
		ws, _, to := a.step(t, idms, "apply", "reload crio.service, no drain")
		checkWarning(t, ws, "(file policy /etc/containers/registries.conf: safe)")
		a.sameRegistries(t)
		a.moveNodes(t, to)
	})

	t.Run("an ImageTagMirrorSet added", func(t *testing.T) {
		_, _, to := a.step(t, itms, "apply", "reload crio.service and drain")
		a.sameRegistries(t)
		a.moveNodes(t, to)
	})

	t.Run("an ImageDigestMirrorSet deleted", func(t *testing.T) {
		ws, _, to := a.step(t, idms, "delete", "reload crio.service and drain")
		checkWarning(t, ws, "unsafe: registry registry.access.redhat.com/ubi9: mirror mirror.example.com/ubi9 was removed")
		a.sameRegistries(t)
		a.moveNodes(t, to)
	})

	t.Run("image.config cluster's search registries", func(t *testing.T) {
		var img configv1.Image
		if err := a.Client.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &img); err != nil {
			t.Fatal(err)
		}
		manifest := `apiVersion: config.openshift.io/v1
kind: Image
metadata: {name: cluster}
spec:
  registrySources:
    containerRuntimeSearchRegistries: [registry.example.com]
    insecureRegistries: [insecure.example.com]
    blockedRegistries: [blocked.example.com, quay.io/a/b/c]
`
		_, _, to := a.step(t, manifest, "apply", "")
		a.sameRegistries(t)
		a.moveNodes(t, to)
	})
}

func contains(ws []string, want string) bool {
	for _, w := range ws {
		if w == want {
			return true
		}
	}
	return false
}

// sameGenerated compares the MCO's generated MachineConfig name with what
// ndp renders for it from the pool's other MachineConfigs.
func (a *advisor) sameGenerated(t *testing.T, name string, ndp func(mcs []*ndpmcv1.MachineConfig) ([]byte, error)) {
	t.Helper()
	ctx := context.Background()
	var theirs ndpmcv1.MachineConfig
	if err := a.Client.Get(ctx, client.ObjectKey{Name: name}, &theirs); err != nil {
		t.Fatalf("the MCO's %s: %v", name, err)
	}
	pool := a.WaitRendered(t, "worker", nil)
	items, err := a.SourcesOf(pool)
	if err != nil {
		t.Fatal(err)
	}
	var mcs []*ndpmcv1.MachineConfig
	for i := range items {
		mcs = append(mcs, &items[i])
	}
	ours, err := ndp(mcs)
	if err != nil {
		t.Fatalf("ndp's %s: %v", name, err)
	}
	var w, g any
	if err := json.Unmarshal(theirs.Spec.Config.Raw, &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ours, &g); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w, g) {
		t.Errorf("%s: ndp renders\n%s\nthe MCO\n%s", name, ours, theirs.Spec.Config.Raw)
	}
}

// sameRegistries compares the MCO's 99-worker-generated-registries with
// mcorender.RegistriesIgnition over the pool's template files and the
// cluster's image-mirror objects and image.config cluster.
func (a *advisor) sameRegistries(t *testing.T) {
	t.Helper()
	a.sameGenerated(t, "99-worker-generated-registries", func(mcs []*ndpmcv1.MachineConfig) ([]byte, error) {
		in, err := mcorender.RegistriesInputs(context.Background(), a.Client)
		if err != nil {
			return nil, err
		}
		return mcorender.RegistriesIgnition("worker", mcs, in)
	})
}
