package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// renderInstall runs hack/install-manifests.sh, as make install-manifests
// does, into a directory of the test's, and returns the named file.
func renderInstall(t *testing.T, file string) string {
	t.Helper()
	dist := t.TempDir()
	cmd := exec.Command("../../hack/install-manifests.sh", "registry.example.com/ndp", "sha256:"+strings.Repeat("0a", 32), kubectlBin)
	cmd.Env = append(os.Environ(), "DIST="+dist)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/install-manifests.sh: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dist, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// object is one document of a rendering: its kind and name, and the
// document itself to decode further.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	raw []byte
}

func splitObjects(t *testing.T, rendered string) []object {
	t.Helper()
	var out []object
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(rendered)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if o.Kind == "" {
			continue // comments only
		}
		o.raw = doc
		out = append(out, o)
	}
}

func (o object) decode(t *testing.T, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(o.raw, into); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Metadata.Name, err)
	}
}

// The OpenShift install (dist/install-openshift.yaml, as make
// install-manifests renders it) is the advisor: ndp's own CRDs only, no
// daemon, a role that writes nothing of the MCO's or the CVO's groups,
// ndp-controller --mode=advisor under restricted-v2, and webhooks that can
// never block the MCO; and the whole file passes a server-side dry-run on an
// API server that serves openshift/api's CRDs (the suite's).
func TestOpenShiftInstallIsTheAdvisor(t *testing.T) {
	rendered := renderInstall(t, "install-openshift.yaml")
	objects := splitObjects(t, rendered)
	kinds := map[string]int{}
	for _, o := range objects {
		kinds[o.Kind]++
		switch o.Kind {
		case "CustomResourceDefinition":
			var crd apiextensionsv1.CustomResourceDefinition
			o.decode(t, &crd)
			if crd.Spec.Group != "ndp.dev" {
				t.Errorf("CRD %s (group %s): the advisor installs ndp.dev CRDs only", crd.Name, crd.Spec.Group)
			}
		case "ClusterRole", "Role":
			var role rbacv1.ClusterRole // a Role's rules are the same shape
			o.decode(t, &role)
			for _, r := range role.Rules {
				writes := slices.ContainsFunc(r.Verbs, func(v string) bool { return !slices.Contains([]string{"get", "list", "watch"}, v) })
				if !writes {
					continue
				}
				for _, g := range r.APIGroups {
					if g == "*" || strings.HasSuffix(g, "openshift.io") || g == "apps" || (g == "" && !slices.Equal(r.Resources, []string{"events"})) {
						t.Errorf("%s %s may %v %v in group %q: the advisor writes only ndp.dev, Events and Leases", o.Kind, o.Metadata.Name, r.Verbs, r.Resources, g)
					}
				}
				if slices.Contains(r.Resources, "*") && !slices.Equal(r.APIGroups, []string{"ndp.dev"}) {
					t.Errorf("%s %s: every resource of %v", o.Kind, o.Metadata.Name, r.APIGroups)
				}
			}
		case "Deployment":
			var d appsv1.Deployment
			o.decode(t, &d)
			c := d.Spec.Template.Spec.Containers[0]
			if !slices.Contains(c.Args, "--mode=advisor") {
				t.Errorf("Deployment %s runs %v, without --mode=advisor", d.Name, c.Args)
			}
			if scc := d.Spec.Template.Annotations["openshift.io/required-scc"]; scc != "restricted-v2" {
				t.Errorf("Deployment %s asks for the SCC %q, want restricted-v2", d.Name, scc)
			}
		case "ValidatingWebhookConfiguration":
			var cfg admissionregistrationv1.ValidatingWebhookConfiguration
			o.decode(t, &cfg)
			if cfg.Annotations["service.beta.openshift.io/inject-cabundle"] != "true" {
				t.Errorf("ValidatingWebhookConfiguration %s: service-ca does not inject its CA bundle: %v", cfg.Name, cfg.Annotations)
			}
			checkAdvisorWebhooks(t, cfg.Webhooks)
		}
	}
	for kind, n := range map[string]int{"CustomResourceDefinition": 3, "Deployment": 1, "ValidatingWebhookConfiguration": 1, "DaemonSet": 0,
		"ValidatingAdmissionPolicy": 0, "SecurityContextConstraints": 0, "PrometheusRule": 0} {
		if kinds[kind] != n {
			t.Errorf("%d objects of kind %s, want %d (all: %v)", kinds[kind], kind, n, kinds)
		}
	}
	for _, s := range []string{"image: registry.example.com/ndp@sha256:", "service.beta.openshift.io/serving-cert-secret-name: ndp-webhook-cert"} {
		if !strings.Contains(rendered, s) {
			t.Errorf("no %q in dist/install-openshift.yaml", s)
		}
	}

	// The whole file, on a server with openshift/api's CRDs (the suite
	// installs them). The webhook configuration is installed already
	// (envtest's, pointed at this process): the shipped one under another
	// name.
	renamed := strings.Replace(rendered, "  name: ndp-webhook\nwebhooks:", "  name: ndp-webhook-shipped\nwebhooks:", 1)
	if renamed == rendered {
		t.Fatal("dist/install-openshift.yaml: no ValidatingWebhookConfiguration ndp-webhook")
	}
	ensureNamespace(t, "ndp-system")
	ensureNamespace(t, "openshift-machine-config-operator") // OpenShift has it: the advisor reads Events there
	var out string
	var err error
	deadline := time.Now().Add(time.Minute)
	for {
		out, err = kubectlFile(t, renamed, "apply", "--dry-run=server")
		if err == nil || time.Now().After(deadline) || !strings.Contains(out, "no matches for kind") {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server -f dist/install-openshift.yaml: %v\n%s", err, out)
	}
	if n := strings.Count(out, "(server dry run)"); n != len(objects) {
		t.Errorf("the dry-run answered for %d objects, the file has %d:\n%s", n, len(objects), out)
	}
}

// checkAdvisorWebhooks: every webhook but the NodeDisruptionPolicy
// validation is side-effect free, fails open, answers within 5 s and skips
// the MCO's service accounts; together they preview every kind whose change
// the MCO rolls out to nodes.
func checkAdvisorWebhooks(t *testing.T, hooks []admissionregistrationv1.ValidatingWebhook) {
	t.Helper()
	covered := map[string]bool{}
	for _, h := range hooks {
		if h.SideEffects == nil || *h.SideEffects != admissionregistrationv1.SideEffectClassNone {
			t.Errorf("webhook %s: sideEffects %s, want None", h.Name, ptrString(h.SideEffects))
		}
		for _, r := range h.Rules {
			for _, res := range r.Resources {
				for _, g := range r.APIGroups {
					for _, op := range r.Operations {
						covered[res+"."+g+" "+string(op)] = true
					}
				}
			}
		}
		if h.Name == "nodedisruptionpolicies.validate.ndp.dev" {
			continue // ndp's own resource: it fails closed
		}
		if h.FailurePolicy == nil || *h.FailurePolicy != admissionregistrationv1.Ignore {
			t.Errorf("webhook %s: failurePolicy %s, want Ignore", h.Name, ptrString(h.FailurePolicy))
		}
		if h.TimeoutSeconds == nil || *h.TimeoutSeconds > 5 {
			t.Errorf("webhook %s: timeoutSeconds %s, want at most 5", h.Name, ptrString(h.TimeoutSeconds))
		}
		skipsMCO := false
		for _, c := range h.MatchConditions {
			skipsMCO = skipsMCO || (strings.Contains(c.Expression, "request.userInfo.username") &&
				strings.Contains(c.Expression, "'system:serviceaccount:openshift-machine-config-operator:'") && strings.HasPrefix(c.Expression, "!"))
		}
		if !skipsMCO {
			t.Errorf("webhook %s: no matchCondition skips the MCO's service accounts: %+v", h.Name, h.MatchConditions)
		}
	}
	for _, want := range []string{
		"machineconfigs.machineconfiguration.openshift.io CREATE", "machineconfigs.machineconfiguration.openshift.io UPDATE", "machineconfigs.machineconfiguration.openshift.io DELETE",
		"kubeletconfigs.machineconfiguration.openshift.io UPDATE", "containerruntimeconfigs.machineconfiguration.openshift.io UPDATE",
		"imagedigestmirrorsets.config.openshift.io UPDATE", "imagetagmirrorsets.config.openshift.io UPDATE", "imagecontentsourcepolicies.operator.openshift.io UPDATE",
		"images.config.openshift.io UPDATE", "machineconfigurations.operator.openshift.io UPDATE", "nodedisruptionpolicies.ndp.dev CREATE",
	} {
		if !covered[want] {
			t.Errorf("no webhook for %s", want)
		}
	}
}

// ptrString prints what p points to, or "unset".
func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
