package mco

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	sigsyaml "sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/controlplane"
	"github.com/ndp-dev/ndp/internal/output"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/docexample"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/render"
)

// The installed advisor's identity and namespace, as the OpenShift overlay
// names them.
const (
	advisorNamespace = "ndp-system"
	advisorAccount   = "ndp-controller"
	advisorUser      = "system:serviceaccount:" + advisorNamespace + ":" + advisorAccount
)

// The API server's limits on admission warnings
// (k8s.io/apiserver/pkg/endpoints/filters/warning.go): 256 characters each,
// 4 KiB in all.
const (
	warningMax  = 256
	warningsMax = 4096
)

// advisorAudit records every request ndp-controller's service account
// makes (and nothing else), once it completed.
const advisorAudit = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["` + advisorUser + `"]
- level: None
`

// idmsManifest is a digest-only mirror for a UBI repository: the MCO
// reloads CRI-O without draining when it is added, and drains when it is
// removed (a mirror removed is not a safe registries.conf change).
const idmsManifest = `apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata:
  name: ubi-mirror
spec:
  imageDigestMirrors:
  - source: registry.access.redhat.com/ubi9
    mirrors: [mirror.example.com/ubi9]
`

// TestAdvisorInstalledBesideTheMCO is issue 29's acceptance test against
// the real MCO controllers: ndp installed in advisor mode from
// overlays/openshift (its CRDs, namespace, account, role and bindings,
// Service and webhook configuration, as rendered by kubectl kustomize; the
// Deployment becomes the ndp-controller binary built from this tree, run
// with the Deployment's arguments and its service account's token) beside
// mcc-ref, the MCO's own controllers. For a chrony MachineConfig, a
// KubeletConfig, an ImageDigestMirrorSet added and deleted: a server-side
// dry-run warns what the MCO will do; applied for real, the MCO renders
// the config ndp rendered (same spec, same name) and ndp's UpdateForecast
// for the nodes' move agrees with the MCO's own daemon code (mco-decide) on
// the two real rendered configs. Last, the API server's audit log shows
// that ndp's account wrote nothing but ndp.dev objects, Events and its
// Lease.
func TestAdvisorInstalledBesideTheMCO(t *testing.T) {
	t.Parallel() // each starts its own API server and controllers; most of its time is the MCO's render delay
	began, built := beginBesideTheMCO(t)

	m, auditLog := startAuditedMCO(t, advisorAudit)
	t.Logf("the MCO's controllers up after %s", time.Since(began).Round(time.Second))
	a := installAdvisor(t, m, <-built)
	t.Logf("ndp's advisor installed and ready after %s", time.Since(began).Round(time.Second))

	// ndp's own policy for chrony (examples/policies/chrony.yaml): ndp
	// plans a restart where the MCO drains and reboots, and says which
	// MachineConfiguration entry gets that from the MCO.
	a.applyPolicy(t, "../../examples/policies/chrony.yaml")
	docexample.Check(t, "../..", "advisor-preview", a.exampleRunner(t))

	idmsFile := filepath.Join(t.TempDir(), "idms.yaml")
	if err := os.WriteFile(idmsFile, []byte(idmsManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []advisorStep{
		{name: "a chrony MachineConfig", manifest: "../../examples/cluster/50-worker-chrony.yaml", verb: "apply",
			mco: "drain and reboot (file /etc/chrony.conf: no node disruption policy)",
			ndp: "ndp: pool worker: restart chronyd.service, no drain; for the MCO add spec.nodeDisruptionPolicy.files: [{path: /etc/chrony.conf, actions: [{type: Restart, restart: {serviceName: chronyd.service}}]}]"},
		{name: "a KubeletConfig", manifest: "../../examples/cluster/kubeletconfig-max-pods.yaml", verb: "apply",
			mco: "drain and reboot (file /etc/kubernetes/kubelet.conf: no node disruption policy)"},
		{name: "an ImageDigestMirrorSet added", manifest: idmsFile, verb: "apply",
			mco: "reload crio.service, no drain (file policy /etc/containers/registries.conf"},
		{name: "the ImageDigestMirrorSet deleted", manifest: idmsFile, verb: "delete",
			mco: "reload crio.service and drain (file policy /etc/containers/registries.conf"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			stepBegan := time.Now()
			a.step(t, s)
			t.Logf("%s: %s", s.name, time.Since(stepBegan).Round(time.Second))
		})
		if t.Failed() {
			break // the next step starts from this one's config
		}
	}
	if !t.Failed() {
		// The forecasts of the four moves, as docs/openshift.md lists them.
		docexample.Check(t, "../..", "advisor-forecasts", a.exampleRunner(t))
	}

	// The MCO's own writes (its controllers' KubeletConfig, generated
	// MachineConfigs, rendered configs, pools) never reach ndp: the
	// webhooks' matchConditions skip its service accounts. Run as the
	// administrator, its client would log ndp's warnings.
	for _, l := range strings.Split(m.Logs.String(), "\n") {
		if strings.Contains(l, "Warning: MCO: ") || strings.Contains(l, "Warning: ndp: ") {
			t.Errorf("the MCO's controllers (as %s) got ndp's preview: %s", MCOAccount, l)
		}
	}

	// Stopped first, so that everything it sent is in the log.
	a.stop()
	a.checkAudit(t, auditLog)
	t.Logf("TestAdvisorInstalledBesideTheMCO took %s", time.Since(began).Round(time.Second))
}

// startAuditedMCO starts the MCO's controllers, as its service account,
// on an API server that writes an audit log by policy; it returns the
// log's path.
func startAuditedMCO(t *testing.T, policy string) (*MCO, string) {
	t.Helper()
	auditDir := t.TempDir()
	auditPolicy, auditLog := filepath.Join(auditDir, "policy.yaml"), filepath.Join(auditDir, "audit.log")
	if err := os.WriteFile(auditPolicy, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	m := startMCOWith(t, mcoOptions{AsMCOAccount: true, Configure: func(env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", auditPolicy).
			Set("audit-log-path", auditLog)
	}})
	return m, auditLog
}

// advisorStep is one change: dry-run, then applied (or deleted) for real.
type advisorStep struct {
	name, manifest, verb string
	// mco is how pool worker's warning goes on after "MCO: pool worker, 3
	// nodes: " (the start of the rest, or all of it); ndp, when set, is
	// ndp's own line, whole.
	mco, ndp string
}

// installedAdvisor is ndp-controller running as its service account,
// installed from overlays/openshift, beside the MCO.
type installedAdvisor struct {
	*MCO
	kubectl string
	nodes   []string
	logs    *output.Buffer
	// args are ndp-controller's arguments (the Deployment's, then the
	// test's kubeconfig and ports).
	args []string
	// metrics is ndp-controller's metrics address (host:port).
	metrics string
	// stop stops ndp-controller (as SIGTERM does; again: nothing), start
	// runs it again with the same arguments and waits until it is ready.
	stop  func()
	start func(t *testing.T)
}

// beginBesideTheMCO begins a test that installs ndp-controller, built
// from this tree, beside the MCO's controllers: it skips in -short mode,
// and without the MCO reference as refDir says; it starts the build
// (buildController) and returns when it began, for the test's log.
func beginBesideTheMCO(t *testing.T) (began time.Time, built <-chan builtController) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds ndp-controller and runs it beside the MCO's controllers")
	}
	refDir(t)
	return time.Now(), buildController(t)
}

// buildController builds ndp-controller from this tree in the background
// (it takes a while on a loaded machine); the channel gives its path, or
// the build's error.
func buildController(t *testing.T) <-chan builtController {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ndp-controller")
	done := make(chan builtController, 1)
	go func() {
		out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ndp-controller").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("go build ../../cmd/ndp-controller: %w\n%s", err, out)
		}
		done <- builtController{bin, err}
	}()
	return done
}

type builtController struct {
	bin string
	err error
}

// installAdvisor installs ndp from its OpenShift overlay on m's API server
// and runs ndp-controller as the overlay's Deployment would, as its
// service account; it returns once the controller is ready, with three
// worker nodes on the worker pool's rendered config.
func installAdvisor(t *testing.T, m *MCO, built builtController) *installedAdvisor {
	t.Helper()
	return installAdvisorFrom(t, m, built, "overlays/openshift")
}

// installAdvisorFrom is installAdvisor from another overlay (a directory
// of the repository, e.g. overlays/openshift-mco-entries).
func installAdvisorFrom(t *testing.T, m *MCO, built builtController, overlay string) *installedAdvisor {
	t.Helper()
	if built.err != nil {
		t.Fatal(built.err)
	}
	bin := built.bin
	assets, err := controlplane.Assets("../..", "kubectl")
	if err != nil {
		t.Fatal(err)
	}
	a := &installedAdvisor{MCO: m, kubectl: filepath.Join(assets, "kubectl"), logs: &output.Buffer{}}

	// The webhook's serving certificate and its CA: what service-ca
	// provides on OpenShift (the Secret ndp-webhook-cert and the CA bundle
	// it injects), for a loopback address.
	certs := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := certs.PrepWithoutInstalling(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = certs.Cleanup() })

	deployment := a.installManifests(t, certs, overlay)
	a.playOperator(t)
	a.addNodes(t, 3)

	// The Deployment's container, as a process: its command's flags, the
	// paths of its volumes replaced by the test's, its ports by free ones
	// (other tests may run beside), the service account's token.
	var c corev1.Container
	for _, cc := range deployment.Spec.Template.Spec.Containers {
		if cc.Name == "ndp-controller" {
			c = cc
		}
	}
	if !slices.Contains(c.Args, "--mode=advisor") {
		t.Fatalf("the overlay's ndp-controller does not run --mode=advisor: %v", c.Args)
	}
	if deployment.Spec.Template.Spec.ServiceAccountName != advisorAccount {
		t.Fatalf("the overlay's ndp-controller runs as %q, not %s", deployment.Spec.Template.Spec.ServiceAccountName, advisorAccount)
	}
	dir := t.TempDir()
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		switch vm.Name {
		case "webhook-cert":
			mounts[vm.MountPath] = certs.LocalServingCertDir
		default:
			mounts[vm.MountPath] = filepath.Join(dir, vm.Name)
		}
	}
	var args []string
	for _, arg := range c.Args {
		if name, value, ok := strings.Cut(arg, "="); ok && mounts[value] != "" {
			arg = name + "=" + mounts[value]
		}
		args = append(args, arg)
	}
	probes := testkit.FreePort(t)
	a.metrics = fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	kubeconfig, _ := a.tokenKubeconfig(t, advisorNamespace, advisorAccount)
	args = append(args,
		"--kubeconfig", kubeconfig,
		"--webhook-port", fmt.Sprint(certs.LocalServingPort),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probes),
		"--metrics-bind-address", a.metrics)
	a.args = args
	t.Logf("ndp-controller %s", strings.Join(args, " "))
	a.start = func(t *testing.T) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "POD_NAMESPACE="+deployment.Namespace)
		cmd.Stdout, cmd.Stderr = a.logs, a.logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		var once sync.Once
		a.stop = func() { once.Do(func() { testkit.Terminate(cmd.Process, done, 30*time.Second) }) }
		testkit.Eventually(t, "ndp-controller ready (elected, webhook server started)", func() (bool, string) {
			select {
			case <-done:
				t.Fatalf("ndp-controller exited:\n%s", testkit.LastLines(a.logs.String(), 60))
			default:
			}
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probes))
			if err != nil {
				return false, err.Error()
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, string(body)
		}, testkit.Within(3*time.Minute))
	}
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			t.Logf("ndp-controller's last lines:\n%s", testkit.LastLines(a.logs.String(), 120))
		}
	})
	a.start(t)
	return a
}

// installManifests renders overlay (overlays/openshift, or one on top of
// it) as hack/install-manifests.sh does (kubectl kustomize) and creates its
// objects, but the Deployment, which it returns: nothing runs pods here.
// The webhooks are pointed at the loopback port with the test's CA instead
// of the Service that service-ca's certificate names; admission policies
// and their bindings are created as they are (the test's API server runs
// them). A kind the test does not know fails it: someone must decide how it
// is installed here.
func (a *installedAdvisor) installManifests(t *testing.T, certs *envtest.WebhookInstallOptions, overlay string) *appsv1.Deployment {
	t.Helper()
	ctx := context.Background()
	out, err := exec.Command(a.kubectl, "kustomize", "../../"+overlay).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kubectl kustomize ../../%s: %v\n%s", overlay, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("decoding the overlay's output: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	// Namespace and CRDs first, the rest in the overlay's order.
	rank := func(u *unstructured.Unstructured) int {
		switch u.GetKind() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		}
		return 2
	}
	sort.SliceStable(objs, func(i, j int) bool { return rank(objs[i]) < rank(objs[j]) })

	var deployment *appsv1.Deployment
	var kinds []string
	for _, u := range objs {
		kinds = append(kinds, u.GetKind()+" "+u.GetName())
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "Service",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		case "CustomResourceDefinition":
			if g, _, _ := unstructured.NestedString(u.Object, "spec", "group"); g != "ndp.dev" {
				t.Errorf("the overlay installs CustomResourceDefinition %s of group %s: only ndp.dev's are ndp's", u.GetName(), g)
			}
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			pointAtLoopback(t, u, certs)
		case "Deployment":
			if deployment != nil {
				t.Fatalf("the overlay has two Deployments: %s and %s", deployment.Name, u.GetName())
			}
			deployment = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, deployment); err != nil {
				t.Fatalf("Deployment %s: %v", u.GetName(), err)
			}
			continue
		default:
			t.Fatalf("the overlay has a %s (%s) that this test does not know how to install beside an envtest API server", u.GetKind(), u.GetName())
		}
		if err := a.Client.Create(ctx, u); err != nil {
			t.Fatalf("creating %s %s from the overlay: %v", u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() == "CustomResourceDefinition" {
			a.waitEstablished(t, u.GetName())
		}
	}
	t.Logf("installed from %s: %s", overlay, strings.Join(kinds, ", "))
	if deployment == nil {
		t.Fatal("the overlay has no Deployment of ndp-controller")
	}
	return deployment
}

// pointAtLoopback rewrites every webhook of a webhook configuration from
// the Service reference to https://127.0.0.1:<port><path> with the test's
// CA: what an API server with no Service network needs. The rest (rules,
// match conditions, failure policy, timeouts) stays as shipped.
func pointAtLoopback(t *testing.T, u *unstructured.Unstructured, certs *envtest.WebhookInstallOptions) {
	t.Helper()
	hooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
	if err != nil {
		t.Fatalf("%s %s: webhooks: %v", u.GetKind(), u.GetName(), err)
	}
	for i, h := range hooks {
		hook := h.(map[string]any)
		path, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
		if path == "" {
			t.Fatalf("%s %s: webhook %v calls no Service path", u.GetKind(), u.GetName(), hook["name"])
		}
		hook["clientConfig"] = map[string]any{
			"url":      fmt.Sprintf("https://%s:%d%s", certs.LocalServingHost, certs.LocalServingPort, path),
			"caBundle": base64.StdEncoding.EncodeToString(certs.LocalServingCAData),
		}
		hooks[i] = hook
	}
	if err := unstructured.SetNestedSlice(u.Object, hooks, "webhooks"); err != nil {
		t.Fatal(err)
	}
}

// waitEstablished waits until a CRD serves its resource.
func (a *installedAdvisor) waitEstablished(t *testing.T, name string) {
	t.Helper()
	testkit.Eventually(t, "CustomResourceDefinition "+name+" established", func() (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if err := a.Client.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == "Established" && cm["status"] == "True" {
				return true, ""
			}
		}
		return false, fmt.Sprint(conds)
	})
}

// addNodes creates n worker Nodes on the worker pool's rendered config, as
// the MCO's daemon leaves them (state Done). Nothing plays the daemon: the
// MCO's node controller sends none of them anywhere (none is Ready), and
// the test moves them itself between steps.
func (a *installedAdvisor) addNodes(t *testing.T, n int) {
	t.Helper()
	worker := a.settled(t)
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("worker-%d", i),
			Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
			Annotations: map[string]string{
				ndpmcv1.CurrentConfigAnnotation: worker,
				ndpmcv1.DesiredConfigAnnotation: worker,
				ndpmcv1.StateAnnotation:         ndpmcv1.StateDone,
			},
		}}
		if err := a.Client.Create(context.Background(), node); err != nil {
			t.Fatal(err)
		}
		a.nodes = append(a.nodes, node.Name)
	}
}

// moveNodes plays the MCO's daemon once: every worker now runs config.
func (a *installedAdvisor) moveNodes(t *testing.T, config string) {
	t.Helper()
	for _, name := range a.nodes {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q,%q:%q}}}`,
			ndpmcv1.CurrentConfigAnnotation, config, ndpmcv1.DesiredConfigAnnotation, config, ndpmcv1.StateAnnotation, ndpmcv1.StateDone)
		if err := a.Client.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			t.Fatalf("moving node %s to %s: %v", name, config, err)
		}
	}
}

// nodesOn is the config every worker runs.
func (a *installedAdvisor) nodesOn(t *testing.T) string {
	t.Helper()
	var on string
	for _, name := range a.nodes {
		var n corev1.Node
		if err := a.Client.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
			t.Fatal(err)
		}
		cur := n.Annotations[ndpmcv1.CurrentConfigAnnotation]
		if on != "" && cur != on {
			t.Fatalf("the workers run %s and %s", on, cur)
		}
		on = cur
	}
	return on
}

// kubectlRun runs the real kubectl as the administrator.
func (a *installedAdvisor) kubectlRun(args ...string) (string, error) {
	out, err := exec.Command(a.kubectl, append([]string{"--kubeconfig", a.Kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// exampleRunner runs the commands of an example session (docexample) as a
// reader of docs/openshift.md would: by sh, from the repository's root, with oc
// (here the same binary as kubectl) on PATH and KUBECONFIG set to this
// cluster. A preview the webhook could not make in time (a loaded machine:
// it gives up after 3 s and is ignored) is retried, as previewUntil does.
func (a *installedAdvisor) exampleRunner(t *testing.T) func(command string) string {
	t.Helper()
	bin := t.TempDir()
	for _, name := range []string{"kubectl", "oc"} {
		if err := os.Symlink(a.kubectl, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	run := func(command string) string {
		var out string
		testkit.Eventually(t, command+" makes its preview", func() (bool, string) {
			cmd := exec.Command("sh", "-c", command)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "KUBECONFIG="+a.Kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			b, _ := cmd.CombinedOutput()
			out = string(b)
			return !strings.Contains(command, "--dry-run=server") || strings.Contains(out, "Warning: MCO: "), out
		})
		t.Logf("$ %s\n%s", command, out)
		return out
	}
	return run
}

// applyPolicy creates an ndp NodeDisruptionPolicy: ndp's own webhook
// validates it (and fails closed), so it is retried until ndp serves.
func (a *installedAdvisor) applyPolicy(t *testing.T, file string) {
	t.Helper()
	var last string
	testkit.Eventually(t, "kubectl apply -f "+file, func() (bool, string) {
		out, err := a.kubectlRun("apply", "-f", file)
		last = out
		return err == nil, out
	}, testkit.Within(2*time.Minute))
	t.Logf("kubectl apply -f %s: %s", file, strings.TrimSpace(last))
	// Compiled and in use before anything previews with it: the advisor
	// compiles a policy after it is created, and a loaded machine showed
	// a preview without it.
	if out, err := a.kubectlRun("wait", "--for=condition=Active", "--timeout=3m", "-f", file); err != nil {
		t.Fatalf("%s never Active: %v: %s", file, err, out)
	}
}

// warnings are the admission warnings kubectl printed.
func warnings(out string) []string {
	var ws []string
	for _, l := range strings.Split(out, "\n") {
		if w, ok := strings.CutPrefix(l, "Warning: "); ok {
			ws = append(ws, w)
		}
	}
	return ws
}

// previewUntil dry-runs the step on the server until pool worker's
// warning says what the step expects, and returns the warnings. The
// advisor's webhooks give up after 3 s and are ignored then (failurePolicy
// Ignore: never block the MCO), so on a loaded machine a dry-run may come
// back without a preview, and an informer may lag a node move: the dry-run
// writes nothing and is repeated.
func (a *installedAdvisor) previewUntil(t *testing.T, s advisorStep) []string {
	t.Helper()
	want := "MCO: pool worker, 3 nodes: " + s.mco
	var ws []string
	attempts := 0
	testkit.Eventually(t, fmt.Sprintf("kubectl %s --dry-run=server -f %s warns %q", s.verb, s.manifest, want), func() (bool, string) {
		attempts++
		out, err := a.kubectlRun(s.verb, "--dry-run=server", "-f", s.manifest)
		if err != nil {
			t.Fatalf("kubectl %s --dry-run=server -f %s: %v\n%s", s.verb, s.manifest, err, out)
		}
		ws = warnings(out)
		ok := strings.HasPrefix(mcoLine(ws), want) && (s.ndp == "" || slices.Contains(ws, s.ndp))
		return ok, out
	}, testkit.Within(3*time.Minute), testkit.Every(2*time.Second))
	t.Logf("kubectl %s --dry-run=server -f %s (attempt %d), warnings:\n%s", s.verb, filepath.Base(s.manifest), attempts, strings.Join(prefixed("Warning: ", ws), "\n"))
	total := 0
	for _, w := range ws {
		total += len(w)
		if len(w) > warningMax {
			t.Errorf("a warning of %d bytes (the API server cuts at %d): %q", len(w), warningMax, w)
		}
	}
	if total > warningsMax {
		t.Errorf("%d bytes of warnings (the API server keeps %d)", total, warningsMax)
	}
	return ws
}

func prefixed(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

// step previews s, applies it for real and compares what the MCO then
// does with what ndp said.
func (a *installedAdvisor) step(t *testing.T, s advisorStep) {
	from := a.nodesOn(t)
	ws := a.previewUntil(t, s)

	// A MachineConfig is rendered before it exists, as the preview of its
	// dry-run renders it: the pool's MachineConfigs with it in place.
	var before *render.Rendered
	if candidate := machineConfigIn(t, s.manifest); candidate != nil && s.verb == "apply" {
		before = a.ndpRenderingWith(t, candidate)
	}

	seen := a.watchForecasts(t)
	if out, err := a.kubectlRun(s.verb, "-f", s.manifest); err != nil {
		t.Fatalf("kubectl %s -f %s: %v\n%s", s.verb, s.manifest, err, out)
	}
	to, ours, rendered := a.rendersAnew(t, from)
	t.Logf("the MCO rendered %s (nodes on %s)", to, from)
	// ndp's rendering of the pool (mcorender.Merge, which the previews
	// and the forecasts call) against the MCO's rendered config.
	if d := specDiff(rendered.Spec, ours.Spec); d != "" {
		t.Errorf("ndp's rendering of pool worker differs from the MCO's %s:\n%s", to, d)
	}
	t.Logf("names: the MCO's %s, ndp's %s: match %t", to, ours.Name, to == ours.Name)
	if ours.Name != to {
		t.Errorf("ndp names pool worker's rendered config %s, the MCO %s", ours.Name, to)
	}
	if before != nil {
		if d := specDiff(rendered.Spec, before.Spec); d != "" {
			t.Errorf("ndp's rendering before the apply differs from the MCO's %s after it:\n%s", to, d)
		}
		t.Logf("before the apply, ndp rendered %s from the pool's MachineConfigs and %s: match %t", before.Name, filepath.Base(s.manifest), before.Name == to)
		if before.Name != to {
			t.Errorf("before the apply, ndp named the rendered config %s; the MCO %s", before.Name, to)
		}
	}

	// ndp-controller's forecast for the nodes' move: its target is its
	// own rendering's name (a forecast to any other name would be ndp's
	// miss), written before the MCO sends a node.
	f := a.waitForecast(t, from, to)
	predicted := seen()
	switch {
	case slices.Contains(predicted, to):
		t.Logf("ndp-controller forecast %s -> %s before the MCO rendered it (toSource predicted)", from, to)
	default:
		t.Logf("ndp-controller's forecast %s -> %s was first seen after the MCO rendered it (predicted targets seen: %v)", from, to, predicted)
	}
	// A name ndp predicted on the way (a generated MachineConfig written
	// in two steps) is no miss: a miss is a forecast to a name the MCO
	// never renders, and waitForecast would not find (from, to).
	for _, p := range predicted {
		if p != to {
			t.Logf("ndp-controller also predicted %s on the way", p)
		}
	}
	if strings.Contains(a.logs.String(), "cannot predict the pool's rendered config") {
		t.Errorf("ndp-controller could not predict a rendered config:\n%s", testkit.LastLines(a.logs.String(), 40))
	}

	// The MCO's own daemon code on the two real rendered configs.
	d := mcoDecide(t, a.Client, a.Dir, from, to)
	t.Logf("mco-decide %s -> %s: %s", from, to, d.says())
	a.agree(t, f, d)
	if got := mcoLine(ws); !strings.HasPrefix(got, "MCO: pool worker, 3 nodes: "+d.says()) {
		t.Errorf("the preview said %q; mco-decide on the real pair: %q", got, d.says())
	}

	a.moveNodes(t, to)
}

// ndpRendering is mcorender.Merge over the MachineConfigs pool worker
// selects now, from the cluster's ControllerConfig: what ndp's previews
// and forecasts render.
func (a *installedAdvisor) ndpRendering(t *testing.T) (*mcfgv1.MachineConfigPool, *render.Rendered) {
	t.Helper()
	pool := a.WaitRendered(t, "worker", nil)
	mcs, err := a.SourcesOf(pool)
	if err != nil {
		t.Fatal(err)
	}
	sources := make([]render.Source, len(mcs))
	for i := range mcs {
		sources[i] = render.SourceOf(&mcs[i], nil)
	}
	ours, err := mcorender.Merge("worker", sources, mcorender.BaseOf(a.ControllerConfig(t)))
	if err != nil {
		t.Fatalf("MergeMCO over pool worker's %d MachineConfigs: %v", len(sources), err)
	}
	return pool, ours
}

// ndpRenderingWith is ndpRendering with candidate among pool worker's
// MachineConfigs (in place of one of the same name).
func (a *installedAdvisor) ndpRenderingWith(t *testing.T, candidate *ndpmcv1.MachineConfig) *render.Rendered {
	t.Helper()
	pool := a.WaitRendered(t, "worker", nil)
	mcs, err := a.SourcesOf(pool)
	if err != nil {
		t.Fatal(err)
	}
	var sources []render.Source
	for i := range mcs {
		if mcs[i].Name != candidate.Name {
			sources = append(sources, render.SourceOf(&mcs[i], nil))
		}
	}
	sources = append(sources, render.SourceOf(candidate, nil))
	ours, err := mcorender.Merge("worker", sources, mcorender.BaseOf(a.ControllerConfig(t)))
	if err != nil {
		t.Fatalf("MergeMCO over pool worker's MachineConfigs and %s: %v", candidate.Name, err)
	}
	return ours
}

// machineConfigIn is the MachineConfig a manifest holds, nil when it
// holds another kind.
func machineConfigIn(t *testing.T, path string) *ndpmcv1.MachineConfig {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var mc ndpmcv1.MachineConfig
	if err := sigsyaml.Unmarshal(data, &mc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if mc.Kind != "MachineConfig" {
		return nil
	}
	return &mc
}

// settled waits until the MCO has rendered pool worker from its
// MachineConfigs as they are now (its controllers rewrite generated ones
// for a while after they start: the names of the sources do not say it is
// done, their contents do), and returns the rendered config's name.
func (a *installedAdvisor) settled(t *testing.T) string {
	t.Helper()
	var name string
	testkit.Eventually(t, "the MCO renders pool worker from its current MachineConfigs (the name MergeMCO gives them)", func() (bool, string) {
		pool, ours := a.ndpRendering(t)
		name = pool.Spec.Configuration.Name
		return name == ours.Name, fmt.Sprintf("the pool's %s, MergeMCO's %s", name, ours.Name)
	}, testkit.Within(3*time.Minute), testkit.Every(time.Second))
	return name
}

// rendersAnew waits until the MCO renders pool worker to a config other
// than from, and until it has caught up with the MachineConfigs (a
// KubeletConfig or an image-mirror object reaches it through a generated
// one); it returns the name, ndp's rendering and the MCO's config. When
// ndp's rendering never agrees, it returns what it has after the wait, for
// the caller to compare.
func (a *installedAdvisor) rendersAnew(t *testing.T, from string) (string, *render.Rendered, *ndpmcv1.MachineConfig) {
	t.Helper()
	var to string
	testkit.Eventually(t, "the MCO renders pool worker anew", func() (bool, string) {
		to = a.WaitRendered(t, "worker", nil).Spec.Configuration.Name
		return to != from, to
	}, testkit.Within(3*time.Minute))
	deadline := time.Now().Add(time.Minute)
	var ours *render.Rendered
	for {
		var pool *mcfgv1.MachineConfigPool
		pool, ours = a.ndpRendering(t)
		to = pool.Spec.Configuration.Name
		if to == ours.Name || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	var rendered ndpmcv1.MachineConfig
	if err := a.Client.Get(context.Background(), client.ObjectKey{Name: to}, &rendered); err != nil {
		t.Fatalf("reading the MCO's %s: %v", to, err)
	}
	return to, ours, &rendered
}

func mcoLine(ws []string) string {
	for _, w := range ws {
		if strings.HasPrefix(w, "MCO: pool worker") {
			return w
		}
	}
	return ""
}

// forecastGVK is ndp's UpdateForecast, read unstructured: it is ndp's
// object, and this test reads it as kubectl does.
var forecastGVK = schema.GroupVersionKind{Group: "ndp.dev", Version: "v1alpha1", Kind: "UpdateForecastList"}

// watchForecasts records the targets of pool worker's forecasts that ndp
// wrote as predicted (before the MCO rendered them) from now on; the
// function returned stops the watch and gives them.
func (a *installedAdvisor) watchForecasts(t *testing.T) func() []string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(forecastGVK)
	w, err := a.Client.Watch(context.Background(), list)
	if err != nil {
		t.Fatalf("watching UpdateForecasts: %v", err)
	}
	var mu sync.Mutex
	var predicted []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			pool, _, _ := unstructured.NestedString(u.Object, "spec", "pool")
			to, _, _ := unstructured.NestedString(u.Object, "spec", "to")
			src, _, _ := unstructured.NestedString(u.Object, "status", "toSource")
			if pool == "worker" && src == "predicted" {
				mu.Lock()
				if !slices.Contains(predicted, to) {
					predicted = append(predicted, to)
				}
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return predicted
	}
}

// forecast is the fields of an UpdateForecast the test compares.
type forecast struct {
	Spec struct {
		Pool, From, To string
	}
	Status struct {
		State     string
		ToSource  string
		NodeCount int
		MCO       *struct {
			Summary string
			Refused []string
			Actions []struct{ Type, Service string }
			Drain   bool
			Reboot  bool
		}
	}
}

// waitForecast waits for ndp's forecast of pool worker's nodes moving
// from → to, with the MCO's decision, and returns it.
func (a *installedAdvisor) waitForecast(t *testing.T, from, to string) *forecast {
	t.Helper()
	var got *forecast
	testkit.Eventually(t, fmt.Sprintf("an UpdateForecast of pool worker %s -> %s with the MCO's decision", from, to), func() (bool, string) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(forecastGVK)
		if err := a.Client.List(context.Background(), list); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, u := range list.Items {
			data, err := json.Marshal(u.Object)
			if err != nil {
				return false, err.Error()
			}
			var f forecast
			if err := json.Unmarshal(data, &f); err != nil {
				return false, err.Error()
			}
			seen = append(seen, fmt.Sprintf("%s %s->%s %s/%s", f.Spec.Pool, f.Spec.From, f.Spec.To, f.Status.State, f.Status.ToSource))
			if f.Spec.Pool == "worker" && f.Spec.From == from && f.Spec.To == to && f.Status.MCO != nil && f.Status.ToSource == "rendered" {
				got = &f
				return true, ""
			}
		}
		return false, strings.Join(seen, "; ")
	}, testkit.Within(3*time.Minute))
	if out, err := a.kubectlRun("get", "updateforecasts"); err == nil {
		t.Logf("kubectl get updateforecasts:\n%s", out)
	}
	if got.Status.NodeCount != len(a.nodes) {
		t.Errorf("the forecast %s -> %s counts %d nodes, want %d", from, to, got.Status.NodeCount, len(a.nodes))
	}
	return got
}

// agree compares ndp's forecast of the MCO's decision with mco-decide's:
// refused or not, the set of actions (the MCO orders different files'
// actions at random and repeats them), drain, reboot.
func (a *installedAdvisor) agree(t *testing.T, f *forecast, d mcoVerdict) {
	t.Helper()
	m := f.Status.MCO
	set := func(types, services []string) []string {
		var s []string
		for i := range types {
			x := types[i]
			if services[i] != "" && types[i] != "Special" {
				x += " " + services[i]
			}
			if !slices.Contains(s, x) {
				s = append(s, x)
			}
		}
		sort.Strings(s)
		return s
	}
	var ft, fs, dt, ds []string
	for _, x := range m.Actions {
		ft, fs = append(ft, x.Type), append(fs, x.Service)
	}
	for _, x := range d.Actions {
		dt, ds = append(dt, x.Type), append(ds, x.Service)
	}
	ndpSet, mcoSet := set(ft, fs), set(dt, ds)
	if (len(m.Refused) > 0) != !d.Reconcilable || !slices.Equal(ndpSet, mcoSet) || m.Drain != d.Drain || m.Reboot != d.Reboot {
		t.Errorf("ndp's forecast %s -> %s: refused %v, actions %v, drain %t, reboot %t; mco-decide: reconcilable %t (%s), actions %v, drain %t, reboot %t",
			f.Spec.From, f.Spec.To, m.Refused, ndpSet, m.Drain, m.Reboot, d.Reconcilable, d.Error, mcoSet, d.Drain, d.Reboot)
	} else {
		t.Logf("ndp's forecast and mco-decide agree: actions %v, drain %t, reboot %t (forecast summary %q)", ndpSet, m.Drain, m.Reboot, m.Summary)
	}
}

// auditEvent is the fields of an audit.k8s.io/v1 Event the test reads.
type auditEvent struct {
	AuditID string `json:"auditID"`
	Stage   string `json:"stage"`
	Verb    string `json:"verb"`
	User    struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	RequestURI     string `json:"requestURI"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// RequestObject is the request's body, where the audit policy logs
	// it (level Request).
	RequestObject json.RawMessage `json:"requestObject"`
}

// writeVerbs are the API server's verbs that change objects.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// advisorMayWrite says what ndp's advisor may write, whatever the
// response: its own objects (ndp.dev: forecasts, its policies' status),
// Events, and its leader-election Lease in its namespace. Nothing else: not
// a Secret or a ConfigMap either (service-ca provides the webhook's
// certificate and CA bundle on OpenShift, so the self-signed fallback,
// which writes a Secret and the webhook configuration, must not run), not
// a webhook configuration, a token or an access review.
func advisorMayWrite(e auditEvent) bool {
	r := e.ObjectRef
	if r == nil {
		return false
	}
	switch {
	case r.APIGroup == "ndp.dev":
		return true
	case r.Resource == "events" && (r.APIGroup == "" || r.APIGroup == "events.k8s.io"):
		return true
	case r.Resource == "leases" && r.APIGroup == "coordination.k8s.io" && r.Namespace == advisorNamespace:
		return true
	}
	return false
}

// neverTouched are the API groups and resources ndp's advisor sends no
// write to at all, even one the API server would refuse: the MCO's, the
// cluster version operator's, and Nodes.
func neverTouched(e auditEvent) bool {
	r := e.ObjectRef
	if r == nil {
		return false
	}
	switch r.APIGroup {
	case "machineconfiguration.openshift.io", "config.openshift.io", "operator.openshift.io":
		return true
	}
	return r.APIGroup == "" && r.Resource == "nodes"
}

// auditAllowance is what ndp's account may write beside what the advisor
// writes (advisorMayWrite).
type auditAllowance struct {
	// mcoEntries (--mco-entries): server-side applies of
	// MachineConfiguration cluster (operator.openshift.io) under field
	// manager ndp, never forced, whose bodies (the audit policy must log
	// them: level Request) hold nothing but ndp's entries for mcoEntryPaths
	// (and units, sshkey) and the guard annotation.
	mcoEntries    bool
	mcoEntryPaths []string
	// perUpdatePaths are those of mcoEntryPaths whose entries are per
	// update: every apply that holds one lists it in the guard annotation,
	// and so did ndp's previous apply (the guard is written first).
	perUpdatePaths []string
}

// mcoEntriesWrites counts what checkAuditWith saw of ndp's applies of
// MachineConfiguration cluster.
type mcoEntriesWrites struct {
	applies, withGuard int
	paths              []string
	// guard is what the last successful apply's guard annotation listed.
	guard []string
}

// checkAudit reads the API server's audit log and checks what ndp's
// service account wrote.
func (a *installedAdvisor) checkAudit(t *testing.T, path string) {
	t.Helper()
	a.checkAuditWith(t, path, auditAllowance{})
}

// mcoEntriesApply checks one write of ndp's account to a MachineConfiguration
// against allow: false (and the reasons) when it is not a server-side apply
// of MachineConfiguration cluster by field manager ndp, unforced, holding
// only ndp's entries and the guard annotation.
func (allow auditAllowance) mcoEntriesApply(e auditEvent, seen *mcoEntriesWrites) (bool, []string) {
	r := e.ObjectRef
	if !allow.mcoEntries || r == nil || r.APIGroup != "operator.openshift.io" || r.Resource != "machineconfigurations" {
		return false, nil
	}
	var why []string
	if e.Verb != "patch" || r.Name != "cluster" || r.Subresource != "" {
		why = append(why, fmt.Sprintf("%s of machineconfigurations %s (subresource %q): only patch (apply) of cluster", e.Verb, r.Name, r.Subresource))
	}
	u, err := url.Parse(e.RequestURI)
	if err != nil {
		return false, []string{err.Error()}
	}
	q := u.Query()
	if q.Get("fieldManager") != "ndp" {
		why = append(why, fmt.Sprintf("field manager %q, not ndp", q.Get("fieldManager")))
	}
	if q.Get("force") == "true" {
		why = append(why, "forced")
	}
	if len(e.RequestObject) == 0 {
		return false, append(why, "no body in the audit log (the audit policy must log machineconfigurations at level Request)")
	}
	var body map[string]any
	if err := json.Unmarshal(e.RequestObject, &body); err != nil {
		return false, append(why, fmt.Sprintf("the body is not a JSON object: %v", err))
	}
	only := func(where string, m map[string]any, keys ...string) {
		for k := range m {
			if !slices.Contains(keys, k) {
				why = append(why, fmt.Sprintf("the body sets %s%s", where, k))
			}
		}
	}
	only("", body, "apiVersion", "kind", "metadata", "spec")
	md, _ := body["metadata"].(map[string]any)
	only("metadata.", md, "name", "annotations")
	var guard []string
	if ann, ok := md["annotations"].(map[string]any); ok {
		only("metadata.annotations.", ann, "ndp.dev/update-entries")
		if v, _ := ann["ndp.dev/update-entries"].(string); v != "" {
			seen.withGuard++
			guard = strings.Fields(v)
		}
	}
	spec, _ := body["spec"].(map[string]any)
	only("spec.", spec, "nodeDisruptionPolicy")
	npc, _ := spec["nodeDisruptionPolicy"].(map[string]any)
	only("spec.nodeDisruptionPolicy.", npc, "files", "units", "sshkey")
	files, _ := npc["files"].([]any)
	for _, f := range files {
		fm, _ := f.(map[string]any)
		p, _ := fm["path"].(string)
		if !slices.Contains(allow.mcoEntryPaths, p) {
			why = append(why, fmt.Sprintf("an entry for %q, not one of ndp's %v", p, allow.mcoEntryPaths))
		}
		if !slices.Contains(seen.paths, p) {
			seen.paths = append(seen.paths, p)
		}
		if slices.Contains(allow.perUpdatePaths, p) {
			if !slices.Contains(guard, "file:"+p) {
				why = append(why, fmt.Sprintf("the per-update entry for %s without the guard annotation listing it (%q)", p, guard))
			}
			if !slices.Contains(seen.guard, "file:"+p) {
				why = append(why, fmt.Sprintf("the per-update entry for %s written before an apply of the guard annotation listing it (ndp's previous apply listed %q)", p, seen.guard))
			}
		}
	}
	seen.applies++
	if e.ResponseStatus != nil && e.ResponseStatus.Code < 300 {
		seen.guard = guard
	}
	return len(why) == 0, why
}

// checkAuditWith is checkAudit with what allow adds to the advisor's
// writes; it returns what it saw of ndp's applies of MachineConfiguration
// cluster.
func (a *installedAdvisor) checkAuditWith(t *testing.T, path string, allow auditAllowance) mcoEntriesWrites {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the audit log: %v", err)
	}
	defer f.Close()
	reads, writes := map[string]int{}, map[string]int{}
	forbidden := map[string]int{}
	seen := map[string]bool{}
	var mcoWrites mcoEntriesWrites
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		if e.User.Username != advisorUser || seen[e.AuditID] {
			continue
		}
		seen[e.AuditID] = true // a watch logs ResponseStarted and ResponseComplete
		key := e.Verb + " " + e.RequestURI
		what := e.Verb
		if r := e.ObjectRef; r != nil {
			res := r.Resource
			if r.Subresource != "" {
				res += "/" + r.Subresource
			}
			if r.APIGroup != "" {
				res += "." + r.APIGroup
			}
			what += " " + res
			if r.Namespace != "" {
				what += " in " + r.Namespace
			}
		}
		if e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusForbidden {
			forbidden[what]++
		}
		if !slices.Contains(writeVerbs, e.Verb) {
			reads[what]++
			continue
		}
		writes[what]++
		code := 0
		if e.ResponseStatus != nil {
			code = e.ResponseStatus.Code
		}
		if ok, why := allow.mcoEntriesApply(e, &mcoWrites); ok || len(why) > 0 {
			if !ok {
				t.Errorf("ndp's advisor sent %s (answered %d): not an apply of its entries to MachineConfiguration cluster: %s", key, code, strings.Join(why, "; "))
			}
			continue
		}
		switch {
		case neverTouched(e):
			t.Errorf("ndp's advisor sent %s (answered %d): it must write nothing of the MCO's, the CVO's or a Node", key, code)
		case !advisorMayWrite(e):
			t.Errorf("ndp's advisor sent %s (answered %d): outside ndp.dev, Events and its Lease", key, code)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	t.Logf("the audit log: %d requests by %s; writes: %v; reads: %v; refused (403): %v", len(seen), advisorUser, writes, reads, forbidden)
	// The log must have seen the advisor at work, or it proves nothing.
	if writes["create updateforecasts.ndp.dev"] == 0 || reads["watch machineconfigs.machineconfiguration.openshift.io"] == 0 {
		t.Errorf("the audit log does not show ndp's advisor creating UpdateForecasts and watching MachineConfigs: is it logging %s?", advisorUser)
	}
	if len(forbidden) > 0 {
		t.Errorf("the API server refused ndp's advisor %v: its role (manifests/rbac/advisor, from the markers of the advisor's code) lacks what it asks for", forbidden)
	}
	if allow.mcoEntries {
		t.Logf("ndp's applies of MachineConfiguration cluster: %d (%d with the guard annotation), entries for %v", mcoWrites.applies, mcoWrites.withGuard, mcoWrites.paths)
	}
	return mcoWrites
}
