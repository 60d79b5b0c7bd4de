package clusterdiff

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// loadDir holds the loaders' test data.
const loadDir = "testdata/load/"

const (
	mustGather      = loadDir + "snapshot/must-gather"
	mustGatherImage = mustGather + "/quay-io-openshift-release-dev-ocp-v4-0-art-dev-sha256-0123"
)

// loaded is what a test expects of one loaded object: its key, where it was
// read from, and (optionally) its values.
type loaded struct {
	key    Key
	source string
	check  func(t *testing.T, obj client.Object)
}

func mcKey(kind, name string) Key { return Key{Group: groupMC, Kind: kind, Name: name} }

// checkLoaded compares entries with want, in order.
func checkLoaded(t *testing.T, got []Entry, want []loaded) {
	t.Helper()
	var gotKeys, wantKeys []string
	for _, e := range got {
		k, err := KeyOf(e.Object)
		if err != nil {
			t.Fatal(err)
		}
		gotKeys = append(gotKeys, k.String()+" @ "+e.Source)
	}
	for _, w := range want {
		wantKeys = append(wantKeys, w.key.String()+" @ "+w.source)
	}
	if !slices.Equal(gotKeys, wantKeys) {
		t.Fatalf("loaded\n  %s\nwant\n  %s", strings.Join(gotKeys, "\n  "), strings.Join(wantKeys, "\n  "))
	}
	for i, w := range want {
		if w.check != nil {
			w.check(t, got[i].Object)
		}
	}
}

// as is obj as a T, or the test fails.
func as[T client.Object](t *testing.T, obj client.Object) T {
	t.Helper()
	o, ok := obj.(T)
	if !ok {
		var zero T
		t.Fatalf("%s is a %T, want a %T", obj.GetName(), obj, zero)
	}
	return o
}

// wantIn fails unless s contains every one of want.
func wantIn(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s %q does not say %q", what, s, w)
		}
	}
}

// withStdin makes "-" read s for the rest of the test.
func withStdin(t *testing.T, s string) {
	t.Helper()
	old := stdin
	stdin = strings.NewReader(s)
	t.Cleanup(func() { stdin = old })
}

func TestLoadManifests(t *testing.T) {
	chrony := func(t *testing.T, obj client.Object) {
		mc := as[*ndpmcv1.MachineConfig](t, obj)
		wantIn(t, "config", string(mc.Spec.Config.Raw), `"path":"/etc/chrony.conf"`, "pool%20example.com")
		if mc.Labels[ndpmcv1.RoleLabel] != "worker" {
			t.Errorf("labels %v, want the worker role", mc.Labels)
		}
	}
	for _, tc := range []struct {
		name  string
		paths []string
		stdin string
		want  []loaded
	}{
		{
			name:  "multi-document YAML, with comment-only documents",
			paths: []string{loadDir + "good/multi.yaml"},
			want: []loaded{
				{mcKey("MachineConfig", "99-worker-chrony"), loadDir + "good/multi.yaml:3", chrony},
				{mcKey("KubeletConfig", "worker-max-pods"), loadDir + "good/multi.yaml:22", func(t *testing.T, obj client.Object) {
					kc := as[*mcfgv1.KubeletConfig](t, obj)
					if kc.Spec.KubeletConfig == nil || string(kc.Spec.KubeletConfig.Raw) != `{"maxPods":300}` {
						t.Errorf("kubeletConfig %v, want maxPods 300", kc.Spec.KubeletConfig)
					}
					if _, ok := kc.Spec.MachineConfigPoolSelector.MatchLabels["pools.operator.machineconfiguration.openshift.io/worker"]; !ok {
						t.Errorf("pool selector %v", kc.Spec.MachineConfigPoolSelector)
					}
				}},
				{Key{Group: v1alpha1.GroupVersion.Group, Kind: v1alpha1.Kind, Name: "chrony"}, loadDir + "good/multi.yaml:34", func(t *testing.T, obj client.Object) {
					p := as[*v1alpha1.NodeDisruptionPolicy](t, obj)
					if p.Namespace != "" {
						t.Errorf("namespace %q of a cluster-scoped object kept", p.Namespace)
					}
					if len(p.Spec.Files) != 1 || p.Spec.Files[0].Path != "/etc/chrony.conf" || len(p.Spec.Files[0].Actions) != 1 ||
						p.Spec.Files[0].Actions[0].Restart == nil || p.Spec.Files[0].Actions[0].Restart.ServiceName != "chronyd.service" {
						t.Errorf("files %+v, want a restart of chronyd for /etc/chrony.conf", p.Spec.Files)
					}
					if b := p.Spec.BundleRef; b == nil || b.Namespace != "ndp-bundles" || b.Name != "chrony-bundle" {
						t.Errorf("bundleRef %+v", b)
					}
				}},
			},
		},
		{
			name:  "a List, each item at its own line",
			paths: []string{loadDir + "good/list.yaml"},
			want: []loaded{
				{mcKey("MachineConfig", "99-infra-ssh"), loadDir + "good/list.yaml:4", func(t *testing.T, obj client.Object) {
					wantIn(t, "config", string(as[*ndpmcv1.MachineConfig](t, obj).Spec.Config.Raw), `"version":"3.4.0"`)
				}},
				{mcKey("MachineConfigPool", "infra"), loadDir + "good/list.yaml:12", func(t *testing.T, obj client.Object) {
					p := as[*mcfgv1.MachineConfigPool](t, obj)
					if s := p.Spec.MachineConfigSelector; s == nil || len(s.MatchExpressions) != 1 || !slices.Equal(s.MatchExpressions[0].Values, []string{"worker", "infra"}) {
						t.Errorf("machineConfigSelector %+v", s)
					}
					if _, ok := p.Spec.NodeSelector.MatchLabels["node-role.kubernetes.io/infra"]; !ok {
						t.Errorf("nodeSelector %+v", p.Spec.NodeSelector)
					}
				}},
			},
		},
		{
			name:  "JSON",
			paths: []string{loadDir + "good/idms.json"},
			want: []loaded{
				{Key{Group: groupConfig, Kind: "ImageDigestMirrorSet", Name: "mirror"}, loadDir + "good/idms.json:1", func(t *testing.T, obj client.Object) {
					m := as[*configv1.ImageDigestMirrorSet](t, obj).Spec.ImageDigestMirrors
					if len(m) != 1 || m[0].Source != "quay.io/openshift-release-dev" || !slices.Equal(m[0].Mirrors, []configv1.ImageMirror{"mirror.example.com/ocp"}) {
						t.Errorf("mirrors %+v", m)
					}
				}},
			},
		},
		{
			name:  "a directory tree: .yaml, .yml and .json, in lexical order",
			paths: []string{loadDir + "tree"},
			want: []loaded{
				{mcKey("MachineConfig", "99-master-kargs"), loadDir + "tree/a/mc.yaml:1", func(t *testing.T, obj client.Object) {
					if got := as[*ndpmcv1.MachineConfig](t, obj).Spec.KernelArguments; !slices.Equal(got, []string{"nosmt"}) {
						t.Errorf("kernelArguments %v", got)
					}
				}},
				{mcKey("MachineConfigPool", "gpu"), loadDir + "tree/b/c/pool.yml:1", nil},
				{Key{Group: v1alpha1.GroupVersion.Group, Kind: "RolloutPolicy", Name: "weekend"}, loadDir + "tree/b/rollout.json:1", func(t *testing.T, obj client.Object) {
					as[*v1alpha1.RolloutPolicy](t, obj)
				}},
			},
		},
		{
			name:  "several paths, in their order",
			paths: []string{loadDir + "good/idms.json", loadDir + "tree/a/mc.yaml"},
			want: []loaded{
				{Key{Group: groupConfig, Kind: "ImageDigestMirrorSet", Name: "mirror"}, loadDir + "good/idms.json:1", nil},
				{mcKey("MachineConfig", "99-master-kargs"), loadDir + "tree/a/mc.yaml:1", nil},
			},
		},
		{
			name:  "stdin: a typed List whose items omit their kind, and a ConfigMap",
			paths: []string{"-"},
			stdin: `# from a pipe
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigList
items:
- metadata:
    name: 99-a
  spec:
    fips: true
- metadata:
    name: 99-b
---
apiVersion: v1
kind: ConfigMap
metadata:
  namespace: ndp-bundles
  name: chrony-bundle
data:
  k: v
`,
			want: []loaded{
				{mcKey("MachineConfig", "99-a"), "stdin:5", func(t *testing.T, obj client.Object) {
					if !as[*ndpmcv1.MachineConfig](t, obj).Spec.FIPS {
						t.Error("fips not read")
					}
				}},
				{mcKey("MachineConfig", "99-b"), "stdin:9", nil},
				{Key{Kind: "ConfigMap", Namespace: "ndp-bundles", Name: "chrony-bundle"}, "stdin:12", func(t *testing.T, obj client.Object) {
					if d := as[*corev1.ConfigMap](t, obj).Data; d["k"] != "v" {
						t.Errorf("data %v", d)
					}
				}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withStdin(t, tc.stdin)
			got, err := LoadManifests(tc.paths)
			if err != nil {
				t.Fatal(err)
			}
			checkLoaded(t, got, tc.want)
		})
	}
}

func TestLoadManifestsBadInput(t *testing.T) {
	noManifests := t.TempDir()
	if err := os.WriteFile(filepath.Join(noManifests, "README.md"), []byte("# notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	accepted := []string{"MachineConfig (machineconfiguration.openshift.io/v1)", "ImageDigestMirrorSet (config.openshift.io/v1)",
		"ImageContentSourcePolicy (operator.openshift.io/v1alpha1)", "RolloutPolicy (ndp.dev/v1alpha1)", "ConfigMap (v1)"}
	for _, tc := range []struct {
		name  string
		paths []string
		stdin string
		want  []string
		not   []string
	}{
		{
			name:  "YAML syntax error in a second document",
			paths: []string{loadDir + "bad/syntax.yaml"},
			want:  []string{loadDir + "bad/syntax.yaml:11: YAML syntax error", "did not find expected ',' or ']'"},
			not:   []string{"line "},
		},
		{
			name:  "duplicate key",
			paths: []string{loadDir + "bad/dup-key.yaml"},
			want:  []string{loadDir + "bad/dup-key.yaml:5: ", `key "name" already set`},
			not:   []string{"unmarshal errors", "\n"},
		},
		{
			name:  "unknown kind",
			paths: []string{loadDir + "bad/unknown-kind.yaml"},
			want:  append([]string{loadDir + "bad/unknown-kind.yaml:8: ", "Deployment web", "apiVersion apps/v1", "kind Deployment", "not a kind a change set may hold"}, accepted...),
		},
		{
			name:  "a Kustomization given to -f",
			paths: []string{loadDir + "bad/kustomization.yaml"},
			want:  []string{loadDir + "bad/kustomization.yaml:1: ", "kind Kustomization", "-k DIR"},
		},
		{
			name:  "a kustomize directory given to -f",
			paths: []string{loadDir + "kustomize"},
			want:  []string{loadDir + "kustomize/kustomization.yaml:1: ", "-k DIR"},
		},
		{
			name:  "unknown field",
			paths: []string{loadDir + "bad/unknown-field.yaml"},
			want:  []string{loadDir + "bad/unknown-field.yaml:1: ", "MachineConfig 99-typo", `unknown field "spec.kernelArgs"`},
			not:   []string{"strict decoding error"},
		},
		{
			name:  "a bad value in a List's item",
			paths: []string{loadDir + "bad/list-item.yaml"},
			want:  []string{loadDir + "bad/list-item.yaml:8: ", "MachineConfig 99-bad", "fips"},
		},
		{
			name:  "no name",
			paths: []string{loadDir + "bad/no-name.yaml"},
			want:  []string{loadDir + "bad/no-name.yaml:2: ", "MachineConfigPool has no metadata.name"},
		},
		{
			name:  "a ConfigMap without a namespace",
			paths: []string{"-"},
			stdin: "\n\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bundle\n",
			want:  []string{"stdin:3: ", "ConfigMap bundle has no metadata.namespace"},
		},
		{
			name:  "the same object twice, in two files of a directory",
			paths: []string{loadDir + "bad/dup"},
			want:  []string{"MachineConfig 99-twice is in the change set twice", loadDir + "bad/dup/a.yaml:1 and " + loadDir + "bad/dup/b.yaml:8"},
		},
		{
			name:  "the same object twice, in two namespaces (ignored for a cluster-scoped kind)",
			paths: []string{loadDir + "good/multi.yaml", "-"},
			stdin: "apiVersion: ndp.dev/v1alpha1\nkind: NodeDisruptionPolicy\nmetadata:\n  name: chrony\n  namespace: elsewhere\n",
			want:  []string{"NodeDisruptionPolicy chrony is in the change set twice", loadDir + "good/multi.yaml:34 and stdin:1"},
		},
		{
			name:  "a Node",
			paths: []string{loadDir + "bad/node.yaml"},
			want:  append([]string{loadDir + "bad/node.yaml:1: ", "Node worker-0", "read from the cluster"}, accepted...),
		},
		{
			name:  "a version of a known kind the diff does not read",
			paths: []string{loadDir + "bad/version.yaml"},
			want:  []string{loadDir + "bad/version.yaml:1: ", "MachineConfig 99-future", "machineconfiguration.openshift.io/v2", "use machineconfiguration.openshift.io/v1"},
		},
		{
			name:  "not an object",
			paths: []string{"-"},
			stdin: "# a comment\njust a string\n",
			want:  []string{"stdin:2: not a Kubernetes object"},
		},
		{
			name:  "no apiVersion",
			paths: []string{"-"},
			stdin: "kind: MachineConfig\nmetadata:\n  name: x\n",
			want:  []string{"stdin:1: not a Kubernetes object: no apiVersion or kind"},
		},
		{
			name:  "a file the directory walk skips, named",
			paths: []string{loadDir + "tree/README.md"},
			want:  []string{loadDir + "tree/README.md:1: not a Kubernetes object"},
		},
		{
			name:  "a directory without manifests",
			paths: []string{noManifests},
			want:  []string{noManifests + ": no .yaml, .yml or .json files"},
		},
		{
			name:  "a missing file",
			paths: []string{loadDir + "good/missing.yaml"},
			want:  []string{loadDir + "good/missing.yaml", "no such file"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withStdin(t, tc.stdin)
			got, err := LoadManifests(tc.paths)
			if err == nil {
				t.Fatalf("no error; loaded %d objects", len(got))
			}
			wantIn(t, "error", err.Error(), tc.want...)
			for _, n := range tc.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("error %q says %q", err, n)
				}
			}
		})
	}
}

func TestLoadKustomize(t *testing.T) {
	dir := loadDir + "kustomize"
	got, err := LoadKustomize(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkLoaded(t, got, []loaded{
		{mcKey("MachineConfig", "99-worker-kargs"), "kustomize " + dir, func(t *testing.T, obj client.Object) {
			// The patch appended to the list of mc.yaml.
			if got := as[*ndpmcv1.MachineConfig](t, obj).Spec.KernelArguments; !slices.Equal(got, []string{"nosmt", "mitigations=off"}) {
				t.Errorf("kernelArguments %v, want the patched [nosmt mitigations=off]", got)
			}
		}},
		{mcKey("MachineConfigPool", "worker"), "kustomize " + dir, func(t *testing.T, obj client.Object) {
			if !as[*mcfgv1.MachineConfigPool](t, obj).Spec.Paused {
				t.Error("pool not paused")
			}
		}},
	})

	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{loadDir + "bad/kustomize-node", []string{"kustomize " + loadDir + "bad/kustomize-node: ", "Node worker-0", "read from the cluster"}},
		// bad/kustomization.yaml names a mc.yaml that is not there.
		{loadDir + "bad", []string{"kustomize " + loadDir + "bad: ", "mc.yaml"}},
		{loadDir + "good", []string{"kustomize " + loadDir + "good: "}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			got, err := LoadKustomize(tc.dir)
			if err == nil {
				t.Fatalf("no error; loaded %d objects", len(got))
			}
			wantIn(t, "error", err.Error(), tc.want...)
		})
	}
}

func TestKindNamed(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind string // "" for none
	}{
		{"mc", "MachineConfig"},
		{"MC", "MachineConfig"},
		{"machineconfig", "MachineConfig"},
		{"MachineConfig", "MachineConfig"},
		{"machineconfigs", "MachineConfig"},
		{"machineconfigs.machineconfiguration.openshift.io", "MachineConfig"},
		{"mc.machineconfiguration.openshift.io", "MachineConfig"},
		{"mc.v1.machineconfiguration.openshift.io", "MachineConfig"},
		{"mc.machineconfiguration", "MachineConfig"},
		{"mcp", "MachineConfigPool"},
		{"idms", "ImageDigestMirrorSet"},
		{"image", "Image"},
		{"image.config", "Image"},
		{"images.config.openshift.io", "Image"},
		{"machineconfiguration", "MachineConfiguration"},
		{"machineconfigurations.operator.openshift.io", "MachineConfiguration"},
		{"no", "Node"},
		{"nodes", "Node"},
		{"cm", "ConfigMap"},
		{"configmaps", "ConfigMap"},
		{"ndp", "NodeDisruptionPolicy"},
		{"nodedisruptionpolicies.ndp.dev", "NodeDisruptionPolicy"},
		{"rp", "RolloutPolicy"},
		// Not these.
		{"mc.config.openshift.io", ""},
		{"mc.machine", ""},
		{"image.operator", ""},
		{"nodes.core", ""},
		{"deployment", ""},
		{"clusteroperators.config.openshift.io", ""},
		{"", ""},
	} {
		k, ok := KindNamed(tc.name)
		if ok != (tc.kind != "") || k.Kind != tc.kind {
			t.Errorf("KindNamed(%q) = %q, %v; want %q", tc.name, k.Kind, ok, tc.kind)
		}
	}
	// Every name of the table names its own kind, and the kind is in the
	// scheme with its list.
	for _, k := range Kinds {
		for _, n := range append([]string{k.Kind, k.Resource}, k.Names...) {
			if got, ok := KindNamed(n); !ok || got.Group != k.Group || got.Kind != k.Kind {
				t.Errorf("KindNamed(%q) = %s.%s, %v; want %s.%s", n, got.Kind, got.Group, ok, k.Kind, k.Group)
			}
		}
		gvk := k.GVK()
		if gvk.Group != k.Group || gvk.Kind != k.Kind {
			t.Errorf("%s.%s: its Go type is %s", k.Kind, k.Group, gvk)
		}
		lgvk, err := apiutil.GVKForObject(k.NewList(), Scheme)
		if err != nil || lgvk != gvk.GroupVersion().WithKind(k.Kind+"List") {
			t.Errorf("%s: its list is %s (%v)", k.Kind, lgvk, err)
		}
	}
}

func TestParseDeletion(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want Key
	}{
		{"mc/x", mcKey("MachineConfig", "x")},
		{"machineconfig/x", mcKey("MachineConfig", "x")},
		{"MachineConfig/99-worker-ssh", mcKey("MachineConfig", "99-worker-ssh")},
		{"machineconfigs.machineconfiguration.openshift.io/x", mcKey("MachineConfig", "x")},
		{"kubeletconfig/max-pods", mcKey("KubeletConfig", "max-pods")},
		{"idms/x", Key{Group: groupConfig, Kind: "ImageDigestMirrorSet", Name: "x"}},
		{"image.config/cluster", Key{Group: groupConfig, Kind: "Image", Name: "cluster"}},
		{"rp/weekend", Key{Group: v1alpha1.GroupVersion.Group, Kind: "RolloutPolicy", Name: "weekend"}},
		{"cm/ns/name", Key{Kind: "ConfigMap", Namespace: "ns", Name: "name"}},
	} {
		got, err := ParseDeletion(tc.arg)
		if err != nil || got != tc.want {
			t.Errorf("ParseDeletion(%q) = %+v, %v; want %+v", tc.arg, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		arg  string
		want []string
	}{
		{"mc", []string{`"mc"`, "want KIND/NAME"}},
		{"mc/", []string{`"mc/"`, "want KIND/NAME"}},
		{"/x", []string{`"/x"`, "want KIND/NAME"}},
		{"cm//name", []string{`"cm//name"`, "want KIND/NAME"}},
		{"mc/a/b/c", []string{`"mc/a/b/c"`, "want KIND/NAME"}},
		{"deployment/web", []string{`"deployment/web"`, `unknown kind "deployment"`, "MachineConfig (mc)", "ConfigMap (cm)"}},
		{"node/worker-0", []string{`"node/worker-0"`, "a Node is read from the cluster", "MachineConfig (mc)"}},
		{"controllerconfig/machine-config-controller", []string{"a ControllerConfig is read from the cluster"}},
		{"mc/ns/x", []string{`"mc/ns/x"`, "MachineConfig is cluster-scoped: want mc/NAME"}},
		{"cm/bundle", []string{`"cm/bundle"`, "ConfigMap is namespaced: want cm/NAMESPACE/NAME"}},
	} {
		got, err := ParseDeletion(tc.arg)
		if err == nil {
			t.Errorf("ParseDeletion(%q) = %+v, no error", tc.arg, got)
			continue
		}
		wantIn(t, "error", err.Error(), tc.want...)
	}
}

func TestLoadSnapshot(t *testing.T) {
	ocGet := loadDir + "snapshot/oc-get.yaml"
	must := func(t *testing.T, o *Objects, k Key) Entry {
		t.Helper()
		e, ok := o.Lookup(k)
		if !ok {
			t.Fatalf("no %s in %v", k, o.Keys())
		}
		return e
	}
	for _, tc := range []struct {
		name  string
		paths []string
		keys  []Key // every object, sorted as Keys sorts them
		notes []string
		check func(t *testing.T, o *Objects)
	}{
		{
			name:  "oc get -o yaml: a List, fields of a newer cluster ignored, other kinds skipped",
			paths: []string{ocGet},
			keys:  []Key{mcKey("MachineConfig", "00-worker"), mcKey("MachineConfigPool", "worker"), {Kind: "Node", Name: "worker-0"}},
			notes: []string{"skipped 2 objects of kinds the diff does not read: ClusterOperator (1), Deployment (1)"},
			check: func(t *testing.T, o *Objects) {
				e := must(t, o, mcKey("MachineConfig", "00-worker"))
				if e.Source != ocGet+":3" {
					t.Errorf("source %q, want %s:3", e.Source, ocGet)
				}
				mc := as[*ndpmcv1.MachineConfig](t, e.Object)
				if mc.ResourceVersion != "4711" || !slices.Equal(mc.Spec.KernelArguments, []string{"nosmt"}) {
					t.Errorf("MachineConfig %+v", mc)
				}
				e = must(t, o, mcKey("MachineConfigPool", "worker"))
				p := as[*mcfgv1.MachineConfigPool](t, e.Object)
				if e.Source != ocGet+":18" || p.Spec.Configuration.Name != "rendered-worker-1" || p.Status.MachineCount != 1 {
					t.Errorf("pool %+v from %s", p, e.Source)
				}
				e = must(t, o, Key{Kind: "Node", Name: "worker-0"})
				if n := as[*corev1.Node](t, e.Object); n.Annotations[ndpmcv1.CurrentConfigAnnotation] != "rendered-worker-1" || e.Source != ocGet+":28" {
					t.Errorf("node %+v from %s", n.ObjectMeta, e.Source)
				}
			},
		},
		{
			name:  "a must-gather: only the directories of the kinds the diff reads",
			paths: []string{mustGather},
			keys: []Key{{Kind: "ConfigMap", Namespace: "ndp-bundles", Name: "chrony-bundle"},
				mcKey("MachineConfig", "x"), mcKey("MachineConfigPool", "worker"), {Kind: "Node", Name: "n"}},
			notes: []string{mustGather + " is a must-gather: read 4 files of the kinds the diff reads"},
			check: func(t *testing.T, o *Objects) {
				base := mustGatherImage + "/cluster-scoped-resources/"
				e := must(t, o, mcKey("MachineConfig", "x"))
				if e.Source != base+"machineconfiguration.openshift.io/machineconfigs/x.yaml:2" ||
					!slices.Equal(as[*ndpmcv1.MachineConfig](t, e.Object).Spec.KernelArguments, []string{"mitigations=off"}) {
					t.Errorf("MachineConfig x from %s: %+v", e.Source, e.Object)
				}
				e = must(t, o, mcKey("MachineConfigPool", "worker"))
				if !as[*mcfgv1.MachineConfigPool](t, e.Object).Spec.Paused || e.Source != base+"machineconfiguration.openshift.io/machineconfigpools/worker.yaml:2" {
					t.Errorf("pool from %s: %+v", e.Source, e.Object)
				}
				e = must(t, o, Key{Kind: "ConfigMap", Namespace: "ndp-bundles", Name: "chrony-bundle"})
				if as[*corev1.ConfigMap](t, e.Object).Data["note"] != "a policy bundle" || e.Source != mustGatherImage+"/namespaces/ndp-bundles/core/configmaps.yaml:4" {
					t.Errorf("ConfigMap from %s: %+v", e.Source, e.Object)
				}
			},
		},
		{
			name:  "a must-gather's image directory",
			paths: []string{mustGatherImage},
			keys: []Key{{Kind: "ConfigMap", Namespace: "ndp-bundles", Name: "chrony-bundle"},
				mcKey("MachineConfig", "x"), mcKey("MachineConfigPool", "worker"), {Kind: "Node", Name: "n"}},
			notes: []string{mustGatherImage + " is a must-gather: read 4 files of the kinds the diff reads"},
		},
		{
			name:  "a directory and a multi-document file",
			paths: []string{loadDir + "tree", loadDir + "good/multi.yaml"},
			keys: []Key{mcKey("KubeletConfig", "worker-max-pods"), mcKey("MachineConfig", "99-master-kargs"), mcKey("MachineConfig", "99-worker-chrony"),
				mcKey("MachineConfigPool", "gpu"), {Group: v1alpha1.GroupVersion.Group, Kind: v1alpha1.Kind, Name: "chrony"}, {Group: v1alpha1.GroupVersion.Group, Kind: "RolloutPolicy", Name: "weekend"}},
			check: func(t *testing.T, o *Objects) {
				if e := must(t, o, mcKey("MachineConfigPool", "gpu")); e.Source != loadDir+"tree/b/c/pool.yml:1" {
					t.Errorf("source %q", e.Source)
				}
			},
		},
		{
			// What a change set may not hold, a snapshot may: a Node, unknown
			// fields, objects twice (the last one wins).
			name:  "what the cluster holds",
			paths: []string{loadDir + "bad/node.yaml", loadDir + "bad/unknown-field.yaml", loadDir + "bad/dup"},
			keys:  []Key{mcKey("MachineConfig", "99-twice"), mcKey("MachineConfig", "99-typo"), mcKey("MachineConfigPool", "worker"), {Kind: "Node", Name: "worker-0"}},
			check: func(t *testing.T, o *Objects) {
				if e := must(t, o, mcKey("MachineConfig", "99-twice")); e.Source != loadDir+"bad/dup/b.yaml:8" {
					t.Errorf("source %q, want the later one", e.Source)
				}
			},
		},
		{
			name:  "a version the diff does not read: skipped",
			paths: []string{loadDir + "bad/version.yaml"},
			notes: []string{"skipped 1 objects of kinds the diff does not read: machineconfiguration.openshift.io/v2 MachineConfig (1)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, notes, err := LoadSnapshot(tc.paths...)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Keys(); !slices.Equal(got, tc.keys) {
				t.Errorf("keys\n  %v\nwant\n  %v", got, tc.keys)
			}
			if !slices.Equal(notes, tc.notes) {
				t.Errorf("notes %q, want %q", notes, tc.notes)
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
}

func TestLoadSnapshotBadInput(t *testing.T) {
	for _, tc := range []struct {
		path string
		want []string
	}{
		{loadDir + "bad/syntax.yaml", []string{loadDir + "bad/syntax.yaml:11: YAML syntax error"}},
		{loadDir + "bad/no-name.yaml", []string{loadDir + "bad/no-name.yaml:2: MachineConfigPool has no metadata.name"}},
		{loadDir + "bad/list-item.yaml", []string{loadDir + "bad/list-item.yaml:8: ", "MachineConfig 99-bad", "fips"}},
		{loadDir + "snapshot/missing.yaml", []string{loadDir + "snapshot/missing.yaml", "no such file"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			_, _, err := LoadSnapshot(tc.path)
			if err == nil {
				t.Fatal("no error")
			}
			wantIn(t, "error", err.Error(), tc.want...)
		})
	}
}

// liveCluster is an object of every kind of the table (the cluster-scoped
// ones named "cluster" but MachineConfigs, pools and Nodes), two
// NodeDisruptionPolicies naming ConfigMaps, and a ConfigMap no policy
// names.
func liveCluster(t *testing.T) (*Objects, []Key) {
	t.Helper()
	var entries []Entry
	var keys []Key
	add := func(obj client.Object) {
		entries = append(entries, Entry{Object: obj, Source: "test"})
		k, err := KeyOf(obj)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	for _, k := range Kinds {
		if k.Namespaced {
			continue
		}
		obj := k.New()
		obj.SetName("cluster")
		obj.SetLabels(map[string]string{"kind": k.Kind})
		switch o := obj.(type) {
		case *ndpmcv1.MachineConfig:
			o.Name = "99-worker-kargs"
			o.Spec.KernelArguments = []string{"nosmt"}
		case *mcfgv1.MachineConfigPool:
			o.Name = "worker"
			o.Spec.Configuration.Name = "rendered-worker-1"
		case *corev1.Node:
			o.Name = "worker-0"
			o.Annotations = map[string]string{ndpmcv1.CurrentConfigAnnotation: "rendered-worker-1"}
		case *v1alpha1.NodeDisruptionPolicy:
			o.Name = "chrony"
			o.Spec.BundleRef = &v1alpha1.BundleReference{Namespace: "ndp-bundles", Name: "chrony-v2"}
			o.Status.ActiveSpec = &v1alpha1.NodeDisruptionPolicySpec{BundleRef: &v1alpha1.BundleReference{Namespace: "ndp-bundles", Name: "chrony-v1"}}
		case *operatorv1.MachineConfiguration:
			o.Spec.NodeDisruptionPolicy.Files = []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf"}}
		}
		add(obj)
	}
	// A second policy naming a ConfigMap the first names, and one that is
	// not there.
	p := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sshd"}}
	p.Spec.BundleRef = &v1alpha1.BundleReference{Namespace: "ndp-bundles", Name: "chrony-v2"}
	p.Status.ActiveSpec = &v1alpha1.NodeDisruptionPolicySpec{BundleRef: &v1alpha1.BundleReference{Namespace: "ndp-bundles", Name: "gone"}}
	add(p)
	for _, name := range []string{"chrony-v1", "chrony-v2"} {
		add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-bundles", Name: name}, BinaryData: map[string][]byte{"bundle.tar.gz": []byte(name)}})
	}
	o, err := NewObjects(entries...)
	if err != nil {
		t.Fatal(err)
	}
	// Not read: no policy names it.
	if err := o.Put(Entry{Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-bundles", Name: "unrelated"}}, Source: "test"}); err != nil {
		t.Fatal(err)
	}
	return o, keys
}

func TestReadLive(t *testing.T) {
	cluster, keys := liveCluster(t)
	got, notes, err := ReadLive(context.Background(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(a.String(), b.String()) })
	if !slices.Equal(got.Keys(), keys) {
		t.Fatalf("read\n  %v\nwant\n  %v", got.Keys(), keys)
	}
	for _, k := range Kinds {
		if !got.Has(k.Group, k.Kind) {
			t.Errorf("no %s read", k.Kind)
		}
	}
	for _, k := range keys {
		e, _ := got.Lookup(k)
		want, _ := cluster.Lookup(k)
		if e.Source != "the cluster" {
			t.Errorf("%s: source %q", k, e.Source)
		}
		if !reflect.DeepEqual(e.Object, want.Object) {
			t.Errorf("%s: read %+v\nwant %+v", k, e.Object, want.Object)
		}
		if e.Object == want.Object {
			t.Errorf("%s: the cluster's own object, not a copy", k)
		}
	}
	wantNotes := []string{"NodeDisruptionPolicy sshd names ConfigMap ndp-bundles/gone, which the cluster does not hold"}
	if !slices.Equal(notes, wantNotes) {
		t.Errorf("notes %q, want %q", notes, wantNotes)
	}
}

// failingReader reads r, but fails the lists of some kinds.
type failingReader struct {
	client.Reader
	list map[string]error // by kind
	get  map[string]error // by kind
}

func (f failingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := apiutil.GVKForObject(list, Scheme)
	if err != nil {
		return err
	}
	if err := f.list[strings.TrimSuffix(gvk.Kind, "List")]; err != nil {
		return err
	}
	return f.Reader.List(ctx, list, opts...)
}

func (f failingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, Scheme)
	if err != nil {
		return err
	}
	if err := f.get[gvk.Kind]; err != nil {
		return err
	}
	return f.Reader.Get(ctx, key, obj, opts...)
}

func forbidden(group, resource, verb string) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, "",
		errors.New(`User "dev" cannot `+verb+` resource "`+resource+`" in API group "`+group+`" at the cluster scope`))
}

func TestReadLiveUnservedKinds(t *testing.T) {
	cluster, _ := liveCluster(t)
	r := failingReader{Reader: cluster, list: map[string]error{
		"ImageContentSourcePolicy": &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: groupOperator, Kind: "ImageContentSourcePolicy"}, SearchedVersions: []string{"v1alpha1"}},
		"RolloutPolicy":            apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "rolloutpolicies"}, ""),
		// Without the policies, no ConfigMap is read.
		v1alpha1.Kind: &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: v1alpha1.Kind}},
	}}
	got, notes, err := ReadLive(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	wantNotes := []string{
		"the cluster does not serve ImageContentSourcePolicy: none read",
		"the cluster does not serve NodeDisruptionPolicy: none read",
		"the cluster does not serve RolloutPolicy: none read",
	}
	if !slices.Equal(notes, wantNotes) {
		t.Errorf("notes %q, want %q", notes, wantNotes)
	}
	for _, k := range Kinds {
		served := !slices.Contains([]string{"ImageContentSourcePolicy", "RolloutPolicy", v1alpha1.Kind, "ConfigMap"}, k.Kind)
		if got.Has(k.Group, k.Kind) != served {
			t.Errorf("%s read: %v, want %v", k.Kind, !served, served)
		}
	}
	if _, ok := got.Lookup(mcKey("MachineConfigPool", "worker")); !ok {
		t.Errorf("pool worker not read: %v", got.Keys())
	}
}

func TestReadLiveErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		list, get map[string]error
		want      []string
	}{
		{
			name: "forbidden pools",
			list: map[string]error{"MachineConfigPool": forbidden(groupMC, "machineconfigpools", "list")},
			want: []string{"reading MachineConfigPool", `User "dev" cannot list resource "machineconfigpools"`,
				"get and list on machineconfigpools.machineconfiguration.openshift.io"},
		},
		{
			// ImageContentSourcePolicies, listed before, are skipped; the
			// Nodes are not.
			name: "forbidden nodes, after a kind the cluster does not serve",
			list: map[string]error{
				"ImageContentSourcePolicy": &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: groupOperator, Kind: "ImageContentSourcePolicy"}},
				"Node":                     forbidden("", "nodes", "list"),
			},
			want: []string{"reading Node", `cannot list resource "nodes"`, "get and list on nodes"},
		},
		{
			name: "forbidden ConfigMaps",
			get:  map[string]error{"ConfigMap": forbidden("", "configmaps", "get")},
			want: []string{"reading ConfigMap", `cannot get resource "configmaps"`, "get and list on configmaps"},
		},
		{
			name: "another error",
			list: map[string]error{"MachineConfig": errors.New("connection refused")},
			want: []string{"reading MachineConfig: connection refused"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster, _ := liveCluster(t)
			_, _, err := ReadLive(context.Background(), failingReader{Reader: cluster, list: tc.list, get: tc.get})
			if err == nil {
				t.Fatal("no error")
			}
			wantIn(t, "error", err.Error(), tc.want...)
			if strings.Contains(tc.name, "forbidden") && !apierrors.IsForbidden(err) {
				t.Errorf("%v: not Forbidden for errors.As", err)
			}
		})
	}
}
