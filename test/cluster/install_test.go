package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The install manifests, as kustomize renders them (kubectl's built-in),
// pass a server-side dry-run: the base (the executor, on plain Kubernetes)
// on any cluster, the openshift overlay (the advisor) on one with
// openshift/api's CRDs. testdata/crds (copied by make generate) holds the
// CRDs of kinds an overlay may use that no suite installs
// (SecurityContextConstraints, PrometheusRule).
func TestInstallManifestsDryRun(t *testing.T) {
	ensureNamespace(t, "ndp-system") // a dry-run does not create the namespace its objects go in
	// The advisor reads Events in the MCO's namespace, which OpenShift has.
	ensureNamespace(t, "openshift-machine-config-operator")
	if out, err := kubectl(t, "apply", "-f", "testdata/crds"); err != nil {
		t.Fatalf("installing the overlay's CRDs: %v\n%s", err, out)
	}
	if out, err := kubectl(t, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/securitycontextconstraints.security.openshift.io", "crd/prometheusrules.monitoring.coreos.com"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, tc := range []struct {
		dir string
		// Objects the rendering must hold, and strings it must (not) contain.
		want, wantText, notText []string
	}{{
		dir: "../../manifests",
		want: []string{"deployment.apps/ndp-controller", "daemonset.apps/ndp-daemon", "validatingwebhookconfiguration.admissionregistration.k8s.io/ndp-webhook-shipped",
			"validatingadmissionpolicy.admissionregistration.k8s.io/ndp-daemon-own-node", "customresourcedefinition.apiextensions.k8s.io/nodedisruptionpolicies.ndp.dev",
			"customresourcedefinition.apiextensions.k8s.io/rolloutpolicies.ndp.dev", "clusterrole.rbac.authorization.k8s.io/ndp-daemon", "service/ndp-webhook", "namespace/ndp-system"},
		wantText: []string{"image: ghcr.io/ndp-dev/ndp:latest", "command:\n        - /ndp-controller", "command:\n        - /ndp-daemon"},
		notText:  []string{"PrometheusRule", "security.openshift.io", "service.beta.openshift.io"},
	}, {
		dir: "../../overlays/openshift",
		want: []string{"deployment.apps/ndp-controller", "validatingwebhookconfiguration.admissionregistration.k8s.io/ndp-webhook-shipped",
			"customresourcedefinition.apiextensions.k8s.io/nodedisruptionpolicies.ndp.dev", "customresourcedefinition.apiextensions.k8s.io/updateforecasts.ndp.dev",
			"customresourcedefinition.apiextensions.k8s.io/nodehistories.ndp.dev",
			"clusterrole.rbac.authorization.k8s.io/ndp-controller", "service/ndp-webhook", "namespace/ndp-system"},
		wantText: []string{"openshift.io/required-scc: restricted-v2", "- --mode=advisor",
			"service.beta.openshift.io/serving-cert-secret-name: ndp-webhook-cert", `service.beta.openshift.io/inject-cabundle: "true"`},
		// The advisor (TestOpenShiftInstallIsTheAdvisor checks it further).
		// No RolloutPolicy: the MCO paces the rollout there.
		notText: []string{"rolloutpolicies.ndp.dev", "kind: DaemonSet", "name: ndp-daemon", "system:serviceaccount:ndp-system:ndp-daemon", "PrometheusRule", "machineconfigs.machineconfiguration.openshift.io\n", "kind: ValidatingAdmissionPolicy", "- --mco-entries"},
	}, {
		// The advisor with its policies driving the MCO: the API server
		// compiles the guard's CEL on this dry-run.
		dir: "../../overlays/openshift-mco-entries",
		want: []string{"deployment.apps/ndp-controller", "validatingadmissionpolicy.admissionregistration.k8s.io/ndp-mco-update-entries",
			"validatingadmissionpolicybinding.admissionregistration.k8s.io/ndp-mco-update-entries", "clusterrole.rbac.authorization.k8s.io/ndp-controller-mco-entries",
			"clusterrolebinding.rbac.authorization.k8s.io/ndp-controller-mco-entries"},
		wantText: []string{"- --mode=advisor", "- --mco-entries=all", "resourceNames:\n  - cluster\n  resources:\n  - machineconfigurations\n  verbs:\n  - patch"},
		notText:  []string{"kind: DaemonSet", "rolloutpolicies.ndp.dev"},
	}} {
		t.Run(strings.TrimPrefix(tc.dir, "../../"), func(t *testing.T) {
			rendered, err := kubectl(t, "kustomize", tc.dir)
			if err != nil {
				t.Fatalf("kubectl kustomize %s: %v\n%s", tc.dir, err, rendered)
			}
			for _, s := range tc.wantText {
				if !strings.Contains(rendered, s) {
					t.Errorf("kubectl kustomize %s: no %q", tc.dir, s)
				}
			}
			for _, s := range tc.notText {
				if strings.Contains(rendered, s) {
					t.Errorf("kubectl kustomize %s: %q", tc.dir, s)
				}
			}
			// The webhook configuration is installed already (by envtest,
			// pointed at this process): check the shipped one under another name.
			renamed := strings.Replace(rendered, "  name: ndp-webhook\nwebhooks:", "  name: ndp-webhook-shipped\nwebhooks:", 1)
			if renamed == rendered {
				t.Fatalf("kubectl kustomize %s: no ValidatingWebhookConfiguration ndp-webhook", tc.dir)
			}
			rendered = renamed
			var out string
			// The CRDs just installed may take a moment to be served.
			deadline := time.Now().Add(time.Minute)
			for {
				out, err = kubectlFile(t, rendered, "apply", "--dry-run=server")
				if err == nil || time.Now().After(deadline) || !strings.Contains(out, "no matches for kind") {
					break
				}
				time.Sleep(time.Second)
			}
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server of %s: %v\n%s", tc.dir, err, out)
			}
			for _, obj := range tc.want {
				if !strings.Contains(out, obj+" ") {
					t.Errorf("the dry-run of %s does not show %s:\n%s", tc.dir, obj, out)
				}
			}
			// One top-level kind: line per object of the rendering.
			if n, objects := strings.Count(out, "(server dry run)"), strings.Count("\n"+rendered, "\nkind: "); n != objects {
				t.Errorf("the dry-run of %s answered for %d objects, the rendering has %d:\n%s", tc.dir, n, objects, out)
			}
		})
	}
}

// controllerRoles is a file holding ndp-controller's roles as the default
// install renders them (kustomize over manifests/rbac/role.yaml: both modes'
// rules, without the advisor's Roles in OpenShift's namespaces), for tests
// that apply the shipped rights alone.
func controllerRoles(t *testing.T) string {
	t.Helper()
	rendered, err := kubectl(t, "kustomize", "../../manifests")
	if err != nil {
		t.Fatalf("kubectl kustomize manifests: %v\n%s", err, rendered)
	}
	var roles []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("kubectl kustomize manifests: %v", err)
		}
		if (meta.Kind == "ClusterRole" || meta.Kind == "Role") && meta.Metadata.Name == "ndp-controller" {
			roles = append(roles, doc)
		}
	}
	if len(roles) < 2 {
		t.Fatalf("kubectl kustomize manifests: %d roles of ndp-controller", len(roles))
	}
	path := filepath.Join(t.TempDir(), "ndp-controller-roles.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(roles, "\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
