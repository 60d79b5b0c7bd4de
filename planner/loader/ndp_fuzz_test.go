package loader_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

// ndpSeeds are NodeDisruptionPolicy documents: the shipped examples, and
// every kind of entry, action and selector the API has.
func ndpSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	paths, err := filepath.Glob("../../examples/policies/*.yaml")
	if err != nil || len(paths) == 0 {
		f.Fatalf("no example policies: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
		j, err := yaml.YAMLToJSON(b)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, j)
	}
	return append(seeds,
		[]byte(`apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata: {name: all-kinds}
spec:
  poolSelector:
    matchLabels: {pools.operator.machineconfiguration.openshift.io/worker: ""}
    matchExpressions:
    - {key: tier, operator: In, values: [a, b]}
    - {key: gpu, operator: DoesNotExist}
  files:
  - path: /etc/app/
    actions: [{type: DaemonReload}, {type: Reload, reload: {serviceName: app.service}}, {type: Restart, restart: {serviceName: app-helper.socket}}]
  - path: /etc/app/fast.conf
    actions: [{type: None}]
  - path: /etc/kernel.conf
    actions: [{type: Reboot}]
  - path: /etc/drain-me
    actions: [{type: Drain}, {type: Restart, restart: {serviceName: crio.service}}]
  units:
  - name: foo.service
    actions: [{type: DaemonReload}, {type: Restart, restart: {serviceName: foo.service}}]
  sshkey: {actions: [{type: None}]}
---
apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata: {name: second}
spec: {priority: 7}
`),
		[]byte(`{"apiVersion":"ndp.dev/v1alpha1","kind":"NodeDisruptionPolicy","metadata":{"name":"bad"},"spec":{"priority":-1,"files":[{"path":"etc/x","actions":[]},{"path":"/etc//y/","actions":[{"type":"Reboot"},{"type":"None"}]},{"path":"/etc/x","actions":[{"type":"Reload"},{"type":"Restart","reload":{"serviceName":"bad name"}},{"type":"Jump"}]}],"units":[{"name":"nounit","actions":[{"type":"None"}]},{"name":"nounit","actions":[{"type":"None"}]}],"poolSelector":{"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]}}}`),
		[]byte("---\n---\n"),
		[]byte("apiVersion: ndp.dev/v1alpha1\nkind: NodeDisruptionPolicy\nmetadata: {name: typo}\nspec:\n  file: []\n"),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"),
		[]byte("apiVersion: ndp.dev/v1alpha1\nkind: NodeDisruptionPolicy\nmetadata: {name: anchors}\nspec:\n  files:\n  - &e {path: /etc/a, actions: [{type: None}]}\n  - {<<: *e, path: /etc/b}\n"),
	)
}

// apiDecoder decodes objects the way the controllers' client and the
// admission webhook do: the scheme's codecs.
var apiDecoder = serializer.NewCodecFactory(scheme.New()).UniversalDeserializer()

// FuzzNodeDisruptionPolicy decodes arbitrary bytes as NodeDisruptionPolicy
// documents, as the CLI does (ParseNodeDisruptionPolicies, behind `ndp
// plan --policy` and `ndp test`) and as the controllers do (the scheme's
// decoder, then FromAPI). Decoding never panics; a refused document
// is an InputError naming the file and document; validation errors name a
// field under spec; a decoded policy written back as JSON or YAML decodes to
// the same policy; and a JSON document both paths accept means the same
// policy to both.
func FuzzNodeDisruptionPolicy(f *testing.F) {
	for _, s := range ndpSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pols, err := loader.ParseNodeDisruptionPolicies("policy.yaml", data)
		if err != nil {
			var ie *machineconfig.InputError
			if !errors.As(err, &ie) || !strings.HasPrefix(ie.Object, "policy.yaml") || ie.Err == nil {
				t.Fatalf("the error does not name the file: %T %v", err, err)
			}
		}
		for _, pol := range pols {
			checkPolicy(t, pol)
			checkPolicyRoundTrip(t, pol)
		}

		obj, _, err := apiDecoder.Decode(data, nil, nil)
		ndp, ok := obj.(*v1alpha1.NodeDisruptionPolicy)
		if err != nil || !ok {
			return
		}
		pol := policy.FromAPI("", ndp, 0, 0)
		checkPolicy(t, pol)
		if len(pols) == 1 && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			if d := cmp.Diff(pols[0], pol, policyCmp...); d != "" {
				t.Fatalf("the CLI and the controllers read one JSON document differently (-cli +controllers):\n%s", d)
			}
		}
	})
}

// policyCmp compares what decides plans, not where a policy was read from.
var policyCmp = []cmp.Option{
	cmpopts.EquateEmpty(),
	cmpopts.IgnoreFields(policy.Policy{}, "Origin"),
	cmpopts.IgnoreFields(policy.Module{}, "Filename", "Field", "LineOffset"),
}

// checkPolicy runs what the engine does with a policy before compiling it,
// and holds validation errors to naming the offending field.
func checkPolicy(t *testing.T, pol policy.Policy) {
	t.Helper()
	for _, e := range pol.Validate() {
		if e.Field != "spec" && !strings.HasPrefix(e.Field, "spec.") {
			t.Fatalf("validation error names no field under spec: %q: %v", e.Field, e)
		}
		if e.Type == field.ErrorTypeInternal {
			t.Fatalf("internal validation error: %v", e)
		}
	}
	_ = pol.RuleCount()
	_ = pol.Revision()
	for _, labels := range []map[string]string{nil, {}, {"pools.operator.machineconfiguration.openshift.io/worker": "", "tier": "a"}} {
		_ = pol.AppliesTo(labels)
	}
}

// toAPI writes a policy back as the NodeDisruptionPolicy it was read from.
func toAPI(pol policy.Policy) *v1alpha1.NodeDisruptionPolicy {
	prio := pol.Priority
	ndp := &v1alpha1.NodeDisruptionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: pol.Name},
		Spec: v1alpha1.NodeDisruptionPolicySpec{
			Priority:     &prio,
			PoolSelector: pol.PoolSelector,
			Files:        pol.Files,
			Units:        pol.Units,
			SSHKey:       pol.SSHKey,
		},
	}
	if len(pol.Modules) > 0 {
		ndp.Spec.Rego = pol.Modules[0].Source
	}
	if len(pol.Tests) > 0 {
		ndp.Spec.RegoTests = pol.Tests[0].Source
	}
	return ndp
}

// checkPolicyRoundTrip: a decoded policy, marshalled as JSON (what the API
// server stores) and as YAML (what `kubectl get -o yaml` prints), decodes
// to the same policy.
func checkPolicyRoundTrip(t *testing.T, pol policy.Policy) {
	t.Helper()
	if len(pol.Modules) > 1 || len(pol.Tests) > 1 {
		t.Fatalf("a NodeDisruptionPolicy document gave %d modules and %d tests", len(pol.Modules), len(pol.Tests))
	}
	ndp := toAPI(pol)
	jsonDoc, err := json.Marshal(ndp)
	if err != nil {
		t.Fatalf("marshalling %+v: %v", ndp, err)
	}
	yamlDoc, err := yaml.Marshal(ndp)
	if err != nil {
		t.Fatalf("marshalling %+v: %v", ndp, err)
	}
	for _, doc := range [][]byte{jsonDoc, yamlDoc} {
		back, err := loader.ParseNodeDisruptionPolicies("policy.yaml", doc)
		if err != nil {
			t.Fatalf("a decoded policy, written back, does not decode: %v\n%s", err, doc)
		}
		if len(back) != 1 {
			t.Fatalf("a decoded policy, written back, gives %d policies:\n%s", len(back), doc)
		}
		if d := cmp.Diff(pol, back[0], cmpopts.EquateEmpty(), cmpopts.IgnoreFields(policy.Module{}, "LineOffset")); d != "" {
			t.Fatalf("a decoded policy, written back, decodes differently (-first +second):\n%s\n%s", d, doc)
		}
	}
}

// TestPolicyFieldNamesAreCaseSensitive: the CLI decoded policy documents
// with encoding/json, which matches field names case-insensitively, so
// `ndp plan --policy` used "Priority: 5" while the API server drops the
// field (or refuses it): the CLI predicted another plan than the cluster
// made (found by FuzzNodeDisruptionPolicy comparing the CLI's decoding with
// the controllers', testdata/fuzz/FuzzNodeDisruptionPolicy/case-variant-keys).
func TestPolicyFieldNamesAreCaseSensitive(t *testing.T) {
	for doc, want := range map[string]string{
		"apiVersion: ndp.dev/v1alpha1\nkind: NodeDisruptionPolicy\nmetadata: {name: a}\nspec: {Priority: 5}\n":                                          `unknown field "spec.Priority"`,
		"apiVersion: ndp.dev/v1alpha1\nkind: NodeDisruptionPolicy\nmetadata: {name: a}\nSpec: {priority: 5}\n":                                          `unknown field "Spec"`,
		`{"apiVersion":"ndp.dev/v1alpha1","kind":"NodeDisruptionPolicy","metadata":{"Name":"a"}}`:                                                       `unknown field "metadata.Name"`,
		"apiVersion: ndp.dev/v1alpha1\nkind: NodeDisruptionPolicy\nmetadata: {name: a}\nspec:\n  files:\n  - {Path: /etc/a, actions: [{type: None}]}\n": `unknown field "spec.files[0].Path"`,
	} {
		_, err := loader.ParseNodeDisruptionPolicies("policy.yaml", []byte(doc))
		var ie *machineconfig.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "policy.yaml: document 1") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an InputError naming %s", doc, err, want)
		}
	}
}
