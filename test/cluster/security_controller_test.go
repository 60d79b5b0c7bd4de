package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/controllers"
	"github.com/ndp-dev/ndp/internal/output"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/policies"
)

// ownerRefPlane is a second control plane whose API server, as
// OpenShift's does, runs the OwnerReferencesPermissionEnforcement
// admission plugin: an owner reference with blockOwnerDeletion needs update
// on the owner's finalizers, and changing an object's owner references
// needs delete on the object. (The suite's API server runs the default
// plugins only.)
type ownerRefPlane struct {
	cfg        *rest.Config
	admin      client.Client
	kubeconfig string
}

func startOwnerRefPlane(t *testing.T) *ownerRefPlane {
	t.Helper()
	cp := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "../..", Kubeconfig: true, Configure: func(env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	}})
	return &ownerRefPlane{cfg: cp.Config, admin: cp.Client, kubeconfig: cp.Kubeconfig}
}

func (p *ownerRefPlane) kubectl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(kubectlBin, append([]string{"--kubeconfig", p.kubeconfig}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (p *ownerRefPlane) create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := p.admin.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
}

// token is a token of the service account, as its pod's projected volume
// holds.
func (p *ownerRefPlane) token(t *testing.T, namespace, name string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s/%s: %v", namespace, name, err)
	}
	return got.Status.Token
}

// What ndp-controller's service account, with the generated roles
// (manifests/rbac/role.yaml, as the default install renders it) and the shipped bindings, may and may not do;
// first, unless -short, that the real ndp-controller needs nothing more:
// run with nothing but that account's token on an API server that enforces
// owner-reference permissions as OpenShift's does, it renders, plans and
// rolls out a pool, adopts an existing registries MachineConfig, reports
// its status, elects itself and keeps its webhook certificate, and the API
// server refuses it nothing.
func TestSecurityBoundariesOfTheController(t *testing.T) {
	ctx := context.Background()
	p := startOwnerRefPlane(t)
	// The namespace, account and bindings first, then the roles; the
	// daemon's manifests too (the controller must not lift its policies).
	p.kubectl(t, "apply", "-f", "../../manifests/deploy/ndp-controller.yaml")
	p.kubectl(t, "apply", "-f", controllerRoles(t))
	p.kubectl(t, "apply", "-f", daemonRole, "-f", daemonDeploy, "-f", daemonAdmission)
	token := p.token(t, "ndp-system", "ndp-controller")
	cfg := rest.AnonymousClientConfig(p.cfg)
	cfg.BearerToken = token
	ctl, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	// The API server loads the bindings asynchronously.
	testkit.Eventually(t, "ndp-controller's ClusterRoleBinding and RoleBinding in force", func() (bool, string) {
		err1 := ctl.List(ctx, &corev1.NodeList{})
		err2 := ctl.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: "absent"}, &corev1.Secret{})
		return err1 == nil && apierrors.IsNotFound(err2), fmt.Sprintf("%v; %v", err1, err2)
	}, testkit.Within(policyPatience))

	if testing.Short() {
		t.Log("-short: not running ndp-controller as its service account")
	} else {
		runControllerAsItsAccount(t, p, cfg)
	}

	// The objects the rows aim at, as an administrator makes them.
	p.create(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ndp-security"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "sec-token"}, StringData: map[string]string{"token": "x"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-other"}, StringData: map[string]string{"token": "x"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sec-other"}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sec-other-webhook"}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-scheduler"}},
	)
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-security", Name: "web"},
		Spec: corev1.PodSpec{NodeName: "sec-other", Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
	p.create(t, web)
	merge := types.MergePatchType
	pool := &unstructured.Unstructured{}
	pool.SetAPIVersion("machineconfiguration.openshift.io/v1")
	pool.SetKind("MachineConfigPool")
	pool.SetName("master")

	runBoundaries(t, []boundary{
		// What the rollout, the policy bundles, the certificate and the
		// leader election need, and what they let through.
		{"sets a Node's desiredConfig (the rollout)", func(context.Context) error {
			return rawPatch(ctl, nodeNamed("sec-other"), merge, `{"metadata":{"annotations":{"machineconfiguration.openshift.io/desiredConfig":"rendered-worker-2"}}}`)
		}, allowed},
		{"changes any other field of a Node (residual: RBAC grants patch, not a field)", func(context.Context) error {
			return rawPatch(ctl, nodeNamed("sec-other"), merge, `{"metadata":{"labels":{"node-role.kubernetes.io/master":""}}}`)
		}, allowed},
		{"lists ConfigMaps in every namespace (a policy's bundle may be in any)", func(ctx context.Context) error {
			return ctl.List(ctx, &corev1.ConfigMapList{})
		}, allowed},
		{"reads another Secret in ndp-system (residual: get cannot name one Secret and stay testable)", func(ctx context.Context) error {
			return ctl.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: "sec-other"}, &corev1.Secret{})
		}, allowed},
		{"updates another ValidatingWebhookConfiguration (residual: by name only in the marker)", func(ctx context.Context) error {
			var w admissionregistrationv1.ValidatingWebhookConfiguration
			if err := ctl.Get(ctx, client.ObjectKey{Name: "sec-other-webhook"}, &w); err != nil {
				return err
			}
			w.Labels = map[string]string{"ndp.dev/touched": "true"}
			return ctl.Update(ctx, &w)
		}, allowed},
		{"creates a Lease in ndp-system (leader election)", func(ctx context.Context) error {
			return ctl.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-probe"}})
		}, allowed},

		// Secrets.
		{"reads a Secret in kube-system", func(ctx context.Context) error {
			return ctl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "sec-token"}, &corev1.Secret{})
		}, byRBAC(`get resource "secrets"`)},
		{"lists Secrets in every namespace", func(ctx context.Context) error { return ctl.List(ctx, &corev1.SecretList{}) }, byRBAC(`list resource "secrets"`)},
		{"lists Secrets in ndp-system", func(ctx context.Context) error {
			return ctl.List(ctx, &corev1.SecretList{}, client.InNamespace("ndp-system"))
		}, byRBAC(`list resource "secrets"`)},
		{"deletes a Secret in ndp-system", func(ctx context.Context) error {
			return ctl.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-other"}})
		}, byRBAC(`delete resource "secrets"`)},
		{"creates a Secret in kube-system", func(ctx context.Context) error {
			return ctl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "sec-new"}})
		}, byRBAC(`create resource "secrets"`)},

		// Nodes beyond the rollout's patch, and pods.
		{"creates a Node", func(ctx context.Context) error { return ctl.Create(ctx, nodeNamed("sec-new")) }, byRBAC(`create resource "nodes"`)},
		{"replaces a Node (update)", func(ctx context.Context) error {
			var n corev1.Node
			if err := p.admin.Get(ctx, client.ObjectKey{Name: "sec-other"}, &n); err != nil {
				return err
			}
			return ctl.Update(ctx, &n)
		}, byRBAC(`update resource "nodes"`)},
		{"deletes a Node", func(ctx context.Context) error { return ctl.Delete(ctx, nodeNamed("sec-other")) }, byRBAC(`delete resource "nodes"`)},
		{"writes a Node's status", func(ctx context.Context) error {
			return ctl.Status().Patch(ctx, nodeNamed("sec-other"), client.RawPatch(merge, []byte(`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)))
		}, byRBAC(`patch resource "nodes/status"`)},
		// Reads pods (a RolloutPolicy's blocking-pods gate), never writes them.
		{"lists pods", func(ctx context.Context) error { return ctl.List(ctx, &corev1.PodList{}) }, allowed},
		{"evicts a pod", func(ctx context.Context) error { return evict(ctx, ctl, web) }, byRBAC(`create resource "pods/eviction"`)},
		{"deletes a pod", func(ctx context.Context) error { return ctl.Delete(ctx, web) }, byRBAC(`delete resource "pods"`)},
		{"creates a pod", func(ctx context.Context) error {
			return ctl.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-security", Name: "sec-new"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
		}, byRBAC(`create resource "pods"`)},
		{"changes the ndp-daemon DaemonSet", func(context.Context) error {
			return rawPatch(ctl, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "ndp-daemon"}}, merge, `{"spec":{"template":{"spec":{"containers":[{"name":"ndp-daemon","image":"evil"}]}}}}`)
		}, byRBAC(`patch resource "daemonsets"`)},

		// DaemonSets: only the MCO's daemon, which the rollout watches by
		// name (mcoguard, controllers.CacheOptions).
		{"lists and watches the MCO's DaemonSet by name", func(ctx context.Context) error {
			sel := client.MatchingFields{"metadata.name": mcoguard.DaemonSetName}
			if err := ctl.List(ctx, &appsv1.DaemonSetList{}, client.InNamespace(mcoguard.DaemonSetNamespace), sel); err != nil {
				return err
			}
			w, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
			if err != nil {
				return err
			}
			watch, err := w.Watch(ctx, &appsv1.DaemonSetList{}, client.InNamespace(mcoguard.DaemonSetNamespace), sel)
			if err == nil {
				watch.Stop()
			}
			return err
		}, allowed},
		{"reads the ndp-daemon DaemonSet", func(ctx context.Context) error {
			return ctl.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: "ndp-daemon"}, &appsv1.DaemonSet{})
		}, byRBAC(`get resource "daemonsets"`)},
		{"lists every DaemonSet", func(ctx context.Context) error {
			return ctl.List(ctx, &appsv1.DaemonSetList{})
		}, byRBAC(`list resource "daemonsets"`)},

		// Leases beyond its own election.
		{"writes a node's heartbeat Lease in kube-node-lease", func(ctx context.Context) error {
			return ctl.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "sec-other"}})
		}, byRBAC(`create resource "leases"`)},
		{"reads the scheduler's leader Lease in kube-system", func(ctx context.Context) error {
			return ctl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-scheduler"}, &coordinationv1.Lease{})
		}, byRBAC(`get resource "leases"`)},
		{"lists Leases in ndp-system", func(ctx context.Context) error {
			return ctl.List(ctx, &coordinationv1.LeaseList{}, client.InNamespace("ndp-system"))
		}, byRBAC(`list resource "leases"`)},
		{"deletes a Lease in ndp-system", func(ctx context.Context) error {
			return ctl.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-probe"}})
		}, byRBAC(`delete resource "leases"`)},

		// Escalation.
		{"binds itself to cluster-admin", func(ctx context.Context) error {
			return ctl.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sec-evil"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ndp-system", Name: "ndp-controller"}}})
		}, byRBAC(`create resource "clusterrolebindings"`)},
		{"creates a RoleBinding in ndp-system", func(ctx context.Context) error {
			return ctl.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-evil"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ndp-system", Name: "ndp-controller"}}})
		}, byRBAC(`create resource "rolebindings"`)},
		{"widens its own ClusterRole", func(context.Context) error {
			return rawPatch(ctl, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ndp-controller"}}, merge, `{"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`)
		}, byRBAC(`patch resource "clusterroles"`)},
		{"impersonates the administrator", func(ctx context.Context) error {
			_, err := impersonating(t, p.cfg, token).CoreV1().Secrets("kube-system").Get(ctx, "sec-token", metav1.GetOptions{})
			return err
		}, byRBAC("impersonate")},
		{"mints a token of ndp-daemon", func(ctx context.Context) error { return tokenFor(ctx, ctl, "ndp-system", "ndp-daemon", nil) },
			byRBAC(`create resource "serviceaccounts/token"`)},
		{"lifts the daemon's admission policy", func(context.Context) error {
			return rawPatch(ctl, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ownNodePolicy}}, merge, `{"spec":{"validations":[{"expression":"true"}]}}`)
		}, byRBAC(`patch resource "validatingadmissionpolicies"`)},
		{"unbinds the daemon's admission policy", func(ctx context.Context) error {
			return ctl.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ownNodePolicy}})
		}, byRBAC(`delete resource "validatingadmissionpolicybindings"`)},
		{"lists ValidatingWebhookConfigurations", func(ctx context.Context) error {
			return ctl.List(ctx, &admissionregistrationv1.ValidatingWebhookConfigurationList{})
		}, byRBAC(`list resource "validatingwebhookconfigurations"`)},
		{"deletes a ValidatingWebhookConfiguration", func(ctx context.Context) error {
			return ctl.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sec-other-webhook"}})
		}, byRBAC(`delete resource "validatingwebhookconfigurations"`)},
		{"creates a MutatingWebhookConfiguration", func(ctx context.Context) error {
			return ctl.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sec-evil"}})
		}, byRBAC(`create resource "mutatingwebhookconfigurations"`)},
		{"changes a CustomResourceDefinition", func(context.Context) error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("apiextensions.k8s.io/v1")
			u.SetKind("CustomResourceDefinition")
			u.SetName("machineconfigs.machineconfiguration.openshift.io")
			return rawPatch(ctl, u, merge, `{"metadata":{"labels":{"x":"y"}}}`)
		}, byRBAC(`patch resource "customresourcedefinitions"`)},

		// ndp's and openshift's objects beyond what the controllers write.
		{"deletes a MachineConfigPool", func(ctx context.Context) error { return ctl.Delete(ctx, pool) }, byRBAC(`delete resource "machineconfigpools"`)},
		{"replaces a MachineConfigPool (update)", func(ctx context.Context) error {
			u := pool.DeepCopy()
			u.SetResourceVersion("1")
			return ctl.Update(ctx, u)
		}, byRBAC(`update resource "machineconfigpools"`)},
		{"deletes a NodeDisruptionPolicy", func(ctx context.Context) error {
			return ctl.Delete(ctx, &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "ndp-default"}})
		}, byRBAC(`delete resource "nodedisruptionpolicies"`)},
		{"creates a ConfigMap", func(ctx context.Context) error {
			return ctl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "sec-evil"}})
		}, byRBAC(`create resource "configmaps"`)},
		{"writes a MachineConfigNode", func(context.Context) error { return applyMCN(ctl, "sec-other", false) }, byRBAC(`patch resource "machineconfignodes"`)},
	})
}

// runControllerAsItsAccount builds ndp-controller and runs it with nothing
// but its service account's token (cfg) against p, and checks it does its
// whole job; the API server must refuse it nothing.
func runControllerAsItsAccount(t *testing.T, p *ownerRefPlane, cfg *rest.Config) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ndp-controller")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ndp-controller").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["ndp"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["ndp-controller"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["ndp"] = &clientcmdapi.Context{Cluster: "ndp", AuthInfo: "ndp-controller"}
	kc.CurrentContext = "ndp"
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kcPath); err != nil {
		t.Fatal(err)
	}
	port, probes := testkit.FreePort(t), testkit.FreePort(t)

	// Its webhook configuration (for the CA bundle; it admits nothing
	// here), a pool with a source config, a registries config someone
	// else made (adopted), and a Ready node of the pool.
	p.create(t, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "ndp-webhook"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "security.validate.ndp.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://localhost:%d/validate-nodedisruptionpolicy", port))},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"ndp.dev"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"nodedisruptionpolicies"}}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"ndp.dev/security-e2e": "true"}},
		}}})
	p.create(t,
		machineConfigPool("sec"),
		sourceMC("00-sec-base", "sec").WithFile("/etc/kubernetes/kubelet.conf", "base").Build(),
		sourceMC("99-sec-generated-registries", "sec").Build(),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sec-0", Labels: map[string]string{"node-role.kubernetes.io/sec": ""}}},
	)
	var n corev1.Node
	if err := p.admin.Get(ctx, client.ObjectKey{Name: "sec-0"}, &n); err != nil {
		t.Fatal(err)
	}
	// A patch: the rollout controller may write the node meanwhile.
	base := n.DeepCopy()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := p.admin.Status().Patch(ctx, &n, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}

	var logs output.Buffer
	cmd := exec.Command(bin, "--kubeconfig", kcPath,
		"--leader-election-namespace=ndp-system", "--metrics-bind-address=0",
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probes),
		"--webhook-port", fmt.Sprint(port),
		"--webhook-cert-dir", filepath.Join(dir, "mounted"), // nothing mounted: self-signed
		"--webhook-self-signed-dir", filepath.Join(dir, "self-signed"),
		"--namespace", "ndp-system", "--webhook-configuration", "ndp-webhook", "--webhook-cert-extra-names", "localhost")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		if cmd.Process != nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			cmd.Process = nil
		}
	}
	t.Cleanup(stop)
	defer func() {
		if t.Failed() {
			t.Logf("ndp-controller output:\n%s", logs.String())
		}
	}()
	const slow = 3 * time.Minute // a fresh process on a loaded machine: elect, compile the policies, render
	owned := func(mc *ndpmcv1.MachineConfig, pool *mcfgv1.MachineConfigPool) bool {
		ref := metav1.GetControllerOf(mc)
		return ref != nil && ref.UID == pool.UID && ptr.Deref(ref.BlockOwnerDeletion, false)
	}
	var pool mcfgv1.MachineConfigPool
	getPool := func() *mcfgv1.MachineConfigPool {
		if err := p.admin.Get(ctx, client.ObjectKey{Name: "sec"}, &pool); err != nil {
			t.Fatal(err)
		}
		return &pool
	}

	// Adopting the registries config: an update adding an owner reference,
	// so delete on it and update on the pool's finalizers.
	testkit.Eventually(t, "99-sec-generated-registries adopted by pool sec", func() (bool, string) {
		var mc ndpmcv1.MachineConfig
		err := p.admin.Get(ctx, client.ObjectKey{Name: "99-sec-generated-registries"}, &mc)
		return err == nil && owned(&mc, getPool()), fmt.Sprintf("%v, owners %v", err, mc.OwnerReferences)
	}, testkit.Within(slow))
	// Rendering: a config created with the pool as its controller, and the
	// pool's target patched.
	var first string
	testkit.Eventually(t, "pool sec rendered from its two sources", func() (bool, string) {
		pl := getPool()
		if len(pl.Spec.Configuration.Source) != 2 {
			return false, fmt.Sprintf("configuration %+v", pl.Spec.Configuration)
		}
		var mc ndpmcv1.MachineConfig
		err := p.admin.Get(ctx, client.ObjectKey{Name: pl.Spec.Configuration.Name}, &mc)
		first = mc.Name
		return err == nil && owned(&mc, pl), fmt.Sprintf("%v, owners %v", err, mc.OwnerReferences)
	}, testkit.Within(slow))
	// The node runs it; a new config is planned and the node sent to it.
	if err := rawPatch(p.admin, nodeNamed("sec-0"), types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q,%q:%q}}}`,
		ndpmcv1.CurrentConfigAnnotation, first, ndpmcv1.DesiredConfigAnnotation, first, ndpmcv1.StateAnnotation, ndpmcv1.StateDone)); err != nil {
		t.Fatal(err)
	}
	p.create(t, sourceMC("50-sec-chrony", "sec").WithFile("/etc/chrony.conf", "pool x").Build())
	var second string
	testkit.Eventually(t, "pool sec re-rendered, planned and rolled out", func() (bool, string) {
		second = getPool().Spec.Configuration.Name
		var mc ndpmcv1.MachineConfig
		if second == first || p.admin.Get(ctx, client.ObjectKey{Name: second}, &mc) != nil || mc.Status.PlanFrom(first) == nil {
			return false, fmt.Sprintf("target %s, plans %+v", second, mc.Status.PostConfigActions)
		}
		var node corev1.Node
		err := p.admin.Get(ctx, client.ObjectKey{Name: "sec-0"}, &node)
		return err == nil && node.Annotations[ndpmcv1.DesiredConfigAnnotation] == second, fmt.Sprintf("node sec-0 %v: %v", err, node.Annotations)
	}, testkit.Within(slow))
	testkit.Eventually(t, "pool sec's status written", func() (bool, string) {
		pl := getPool()
		return pl.Status.MachineCount == 1 && len(pl.Status.Conditions) > 0, fmt.Sprintf("%+v", pl.Status)
	}, testkit.Within(slow))
	testkit.Eventually(t, "ClusterOperator ndp created and reporting", func() (bool, string) {
		var co configv1.ClusterOperator
		err := p.admin.Get(ctx, client.ObjectKey{Name: "ndp"}, &co)
		return err == nil && len(co.Status.Conditions) > 0, fmt.Sprintf("%v: %+v", err, co.Status)
	}, testkit.Within(slow))
	testkit.Eventually(t, "the default NodeDisruptionPolicy created and accepted", func() (bool, string) {
		var np v1alpha1.NodeDisruptionPolicy
		err := p.admin.Get(ctx, client.ObjectKey{Name: policies.DefaultPolicyName}, &np)
		c := meta.FindStatusCondition(np.Status.Conditions, v1alpha1.ConditionAccepted)
		return err == nil && c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%v: %+v", err, np.Status)
	}, testkit.Within(slow))
	testkit.Eventually(t, "the leader Lease in ndp-system held", func() (bool, string) {
		var l coordinationv1.Lease
		err := p.admin.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: controllers.LeaderElectionID}, &l)
		return err == nil && ptr.Deref(l.Spec.HolderIdentity, "") != "", fmt.Sprintf("%v: %+v", err, l.Spec)
	}, testkit.Within(slow))
	testkit.Eventually(t, "the self-signed certificate's Secret written and its CA injected", func() (bool, string) {
		var s corev1.Secret
		var w admissionregistrationv1.ValidatingWebhookConfiguration
		err1 := p.admin.Get(ctx, client.ObjectKey{Namespace: "ndp-system", Name: "ndp-webhook-self-signed"}, &s)
		err2 := p.admin.Get(ctx, client.ObjectKey{Name: "ndp-webhook"}, &w)
		return err1 == nil && err2 == nil && len(s.Data["ca.crt"]) > 0 && string(w.Webhooks[0].ClientConfig.CABundle) == string(s.Data["ca.crt"]),
			fmt.Sprintf("%v; %v", err1, err2)
	}, testkit.Within(slow))
	testkit.Eventually(t, "an event about the rendering of pool sec", func() (bool, string) {
		var list eventsv1.EventList
		err := p.admin.List(ctx, &list, client.InNamespace(metav1.NamespaceDefault))
		for _, e := range list.Items {
			if e.Regarding.Name == "sec" && e.Reason == "Rendered" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%v, %d events", err, len(list.Items))
	}, testkit.Within(slow))
	stop()
	if strings.Contains(strings.ToLower(logs.String()), "forbidden") {
		t.Errorf("the API server refused ndp-controller something:\n%s", logs.String())
	}
}
