package mco

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/render"
)

// TestMergeMCOIsTheMCOsRender adds user MachineConfigs one step at a time
// and, after each, checks that mcorender.Merge over the cluster's
// MachineConfigs (those each pool selects) and its ControllerConfig gives
// the MCO render controller's rendered config: the same spec and the same
// name.
func TestMergeMCOIsTheMCOsRender(t *testing.T) {
	t.Parallel() // each starts its own API server and controllers; most of its time is the MCO's render delay
	m := startMCO(t)
	ctx := context.Background()
	base := mcorender.BaseOf(m.ControllerConfig(t))

	steps := []struct {
		name  string
		pools []string
		apply func(t *testing.T)
		// files are contents a node must read from the MCO's rendered
		// config (machineconfig.FileContents), by path.
		files map[string]string
	}{
		{"the templates and the installer's configs", []string{"master", "worker"}, nil, nil},
		{"a chrony file", []string{"worker"}, func(t *testing.T) {
			m.create(t, builder.MachineConfig("50-worker-chrony").WithRole("worker").WithIgnitionVersion("3.2.0").
				WithFile("/etc/chrony.conf", "pool 2.rhel.pool.ntp.org iburst\ndriftfile /var/lib/chrony/drift\n").Build())
		}, map[string]string{"/etc/chrony.conf": "pool 2.rhel.pool.ntp.org iburst\ndriftfile /var/lib/chrony/drift\n"}},
		{"a gzip file overridden by a plain one in a later MachineConfig", []string{"worker"}, func(t *testing.T) {
			m.create(t, builder.MachineConfig("60-worker-gz").WithRole("worker").
				WithFiles(builder.FileGzip("/etc/ndp-gz.conf", "compressed=true\n")).Build())
			m.create(t, builder.MachineConfig("61-worker-plain").WithRole("worker").WithIgnitionVersion("3.5.0").
				WithFiles(builder.File("/etc/ndp-gz.conf", "compressed=false\n")).Build())
		}, map[string]string{"/etc/ndp-gz.conf": "compressed=false\n"}},
		{"a later entry that changes only the mode of a gzip file", []string{"worker"}, func(t *testing.T) {
			// The MCO clears the compression and keeps the gzip contents:
			// MergeMCO must give the same (broken) file.
			m.create(t, builder.MachineConfig("62-worker-gz").WithRole("worker").
				WithFiles(builder.FileGzip("/etc/ndp-gz2.conf", "compressed=true\n")).Build())
			m.create(t, builder.MachineConfig("63-worker-mode").WithRole("worker").
				WithFiles(builder.Entry{"path": "/etc/ndp-gz2.conf", "mode": 384}).Build())
		}, nil},
		{"a kernel argument", []string{"worker"}, func(t *testing.T) {
			m.create(t, builder.MachineConfig("70-worker-kargs").WithRole("worker").WithKernelArguments("nosmt", "mitigations=auto").Build())
		}, nil},
		{"an extension", []string{"worker"}, func(t *testing.T) {
			m.create(t, builder.MachineConfig("80-worker-usbguard").WithRole("worker").WithSpec("extensions", []string{"usbguard"}).Build())
		}, nil},
		{"an unsupported extension on a MachineConfig without an Ignition config", []string{"worker"}, func(t *testing.T) {
			// The MCO checks extensions only beside a config: it renders this.
			mc := builder.MachineConfig("81-worker-bare").WithRole("worker").WithSpec("extensions", []string{"not-an-extension"}).Build()
			mc.Spec.Config.Raw = nil
			m.create(t, mc)
		}, nil},
		{"an osImageURL override", []string{"worker"}, func(t *testing.T) {
			m.create(t, builder.MachineConfig("90-worker-os").WithRole("worker").
				WithOSImageURL("quay.io/example/custom-os@sha256:1111111111111111111111111111111111111111111111111111111111111111").Build())
		}, nil},
		{"a custom pool infra inheriting worker", []string{"worker", "infra"}, func(t *testing.T) {
			m.create(t, builder.MachineConfig("50-infra-chrony").WithRole("infra").
				WithFile("/etc/chrony.conf", "server infra-ntp.example.com iburst\n").Build())
			pool := &mcfgv1.MachineConfigPool{
				ObjectMeta: metav1.ObjectMeta{Name: "infra"},
				Spec: mcfgv1.MachineConfigPoolSpec{
					MachineConfigSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: ndpmcv1.RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"worker", "infra"}},
					}},
					NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/infra": ""}},
				},
			}
			if err := m.Client.Create(ctx, pool); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.apply != nil {
				step.apply(t)
			}
			for _, name := range step.pools {
				pool := m.WaitRendered(t, name, nil)
				var rendered ndpmcv1.MachineConfig
				if err := m.Client.Get(ctx, client.ObjectKey{Name: pool.Spec.Configuration.Name}, &rendered); err != nil {
					t.Fatalf("pool %s: reading its rendered config: %v", name, err)
				}
				mcs, err := m.SourcesOf(pool)
				if err != nil {
					t.Fatal(err)
				}
				sources := make([]render.Source, len(mcs))
				for i := range mcs {
					sources[i] = render.SourceOf(&mcs[i], nil)
				}
				got, err := mcorender.Merge(name, sources, base)
				if err != nil {
					t.Fatalf("pool %s: MergeMCO: %v", name, err)
				}
				t.Logf("pool %s: the MCO's %s, MergeMCO's %s: names match: %t", name, rendered.Name, got.Name, rendered.Name == got.Name)
				if d := specDiff(rendered.Spec, got.Spec); d != "" {
					t.Errorf("pool %s: MergeMCO's spec differs from the MCO's %s:\n%s", name, rendered.Name, d)
				}
				if got.Name != rendered.Name {
					t.Errorf("pool %s: MergeMCO names it %s, the MCO %s", name, got.Name, rendered.Name)
				}
				// The name is the hash of the spec as the API server keeps it, too.
				if again, err := mcorender.Name(name, rendered.Spec); err != nil || again != rendered.Name {
					t.Errorf("pool %s: MCOName of the MCO's stored spec is %s (%v), want %s", name, again, err, rendered.Name)
				}
				checkFiles(t, &rendered, step.files)
			}
		})
	}
}

// create creates a user MachineConfig, without the status ndp's type
// carries (the MCO's MachineConfig has none).
func (m *MCO) create(t *testing.T, mc *ndpmcv1.MachineConfig) {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(mc)
	if err != nil {
		t.Fatal(err)
	}
	delete(obj, "status")
	if mc.Spec.Config.Raw == nil {
		unstructured.RemoveNestedField(obj, "spec", "config")
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(mcfgv1.GroupVersion.WithKind("MachineConfig"))
	if err := m.Client.Create(context.Background(), u); err != nil {
		t.Fatalf("creating MachineConfig %s: %v", mc.Name, err)
	}
}

// specDiff compares two rendered specs: the Ignition configs as JSON values
// (the API server keeps spec.config as it decoded it, keys reordered), the
// rest field by field. "" when equal.
func specDiff(want, got mcfgv1.MachineConfigSpec) string {
	var b strings.Builder
	var w, g any
	if err := json.Unmarshal(want.Config.Raw, &w); err != nil {
		fmt.Fprintf(&b, "the MCO's spec.config: %v\n", err)
	}
	if err := json.Unmarshal(got.Config.Raw, &g); err != nil {
		fmt.Fprintf(&b, "MergeMCO's spec.config: %v\n", err)
	}
	if d := cmp.Diff(w, g); d != "" {
		fmt.Fprintf(&b, "spec.config (-MCO +MergeMCO):\n%s", d)
	}
	want.Config.Raw, got.Config.Raw = nil, nil
	if d := cmp.Diff(want, got); d != "" {
		fmt.Fprintf(&b, "spec, config aside (-MCO +MergeMCO):\n%s", d)
	}
	return b.String()
}

// checkFiles decodes every inline file of the MCO's rendered config as a
// node would (machineconfig.FileContents): the compression it names must
// fit its contents.
func checkFiles(t *testing.T, rendered *ndpmcv1.MachineConfig, want map[string]string) {
	t.Helper()
	cfg, err := machineconfig.New(rendered.Name, rendered.Spec)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i := range cfg.Ignition.Storage.Files {
		f := &cfg.Ignition.Storage.Files[i]
		data, err := machineconfig.FileContents(cfg, f)
		if err != nil {
			t.Errorf("%s: %v", rendered.Name, err)
		}
		got[f.Path] = string(data)
	}
	for path, contents := range want {
		if got[path] != contents {
			t.Errorf("%s: a node reads %s as %q, want %q", rendered.Name, path, got[path], contents)
		}
	}
}
