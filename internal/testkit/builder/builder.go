// Package builder builds the MachineConfigs, Ignition configs and the
// MachineConfiguration tests need, in the style of cluster-api's
// util/test/builder:
//
//	builder.MachineConfig("50-worker-chrony").WithRole("worker").
//		WithFile("/etc/chrony.conf", "pool x\n").WithUnit("chronyd.service", "").Build()
//
// Build returns ndp's MachineConfig (apis/machineconfiguration/v1);
// Document its JSON document (valid YAML), as `ndp plan` and the planner's
// ParseMachineConfig read it; Config that document parsed by
// machineconfig.Parse. The Ignition version is 3.4.0 unless set.
package builder

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/machineconfig"
)

// IgnitionVersion is the version a built config declares unless set.
const IgnitionVersion = "3.4.0"

// WorkerKubeletConf is a worker pool's own kubelet.conf, as YAML (the MCO's
// templates write it so), cut to a few fields. The rendered configs of
// the docs' examples, and so their plan hashes, stand on it as it is.
const WorkerKubeletConf = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
clusterDNS:
- 172.30.0.10
clusterDomain: cluster.local
maxPods: 250
`

// Entry is one element of an Ignition list: a file, a unit, a disk, a
// user. With returns a copy with one more field.
type Entry map[string]any

// With is a copy of e with key set to value.
func (e Entry) With(key string, value any) Entry {
	out := maps.Clone(e)
	if out == nil {
		out = Entry{}
	}
	out[key] = value
	return out
}

// DataURL is contents as a plain (URL-escaped) data URL.
func DataURL(contents string) string { return "data:," + url.PathEscape(contents) }

// File is an Ignition file with contents as a plain data URL.
func File(path, contents string) Entry {
	return Entry{"path": path, "contents": map[string]any{"source": DataURL(contents)}}
}

// FileB64 is an Ignition file with contents as a base64 data URL.
func FileB64(path, contents string) Entry {
	return Entry{"path": path, "contents": map[string]any{"source": "data:;base64," + base64.StdEncoding.EncodeToString([]byte(contents))}}
}

// FileGzip is an Ignition file with gzip-compressed base64 contents.
func FileGzip(path, contents string) Entry {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(contents))
	_ = zw.Close()
	return Entry{"path": path, "contents": map[string]any{"compression": "gzip", "source": "data:;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())}}
}

// FileSource is an Ignition file whose contents come from source as is (a
// data URL of another form, a remote URL).
func FileSource(path, source string) Entry {
	return Entry{"path": path, "contents": map[string]any{"source": source}}
}

// Unit is a systemd unit; empty contents leave the field out.
func Unit(name, contents string) Entry {
	u := Entry{"name": name}
	if contents != "" {
		u["contents"] = contents
	}
	return u
}

// IgnitionBuilder builds an Ignition config.
type IgnitionBuilder struct {
	cfg map[string]any
}

// Ignition starts an Ignition config of IgnitionVersion.
func Ignition() *IgnitionBuilder {
	return &IgnitionBuilder{cfg: map[string]any{"ignition": map[string]any{"version": IgnitionVersion}}}
}

// WithVersion sets the Ignition version.
func (b *IgnitionBuilder) WithVersion(v string) *IgnitionBuilder {
	b.cfg["ignition"] = map[string]any{"version": v}
	return b
}

// WithFile adds a file with plain data-URL contents.
func (b *IgnitionBuilder) WithFile(path, contents string) *IgnitionBuilder {
	return b.WithFiles(File(path, contents))
}

// WithFiles adds files (File, FileB64, or any entry).
func (b *IgnitionBuilder) WithFiles(files ...Entry) *IgnitionBuilder {
	return b.WithEntries("storage", "files", files...)
}

// WithFileMap adds files (path → contents) in the order of their paths,
// each with mode (0 leaves it out) and overwrite set.
func (b *IgnitionBuilder) WithFileMap(files map[string]string, mode int) *IgnitionBuilder {
	for _, p := range slices.Sorted(maps.Keys(files)) {
		f := File(p, files[p]).With("overwrite", true)
		if mode != 0 {
			f = f.With("mode", mode)
		}
		b.WithFiles(f)
	}
	return b
}

// WithUnit adds a systemd unit.
func (b *IgnitionBuilder) WithUnit(name, contents string) *IgnitionBuilder {
	return b.WithUnits(Unit(name, contents))
}

// WithUnits adds units (Unit, or any entry).
func (b *IgnitionBuilder) WithUnits(units ...Entry) *IgnitionBuilder {
	return b.WithEntries("systemd", "units", units...)
}

// WithUnitMap adds units (name → contents) in the order of their names.
func (b *IgnitionBuilder) WithUnitMap(units map[string]string) *IgnitionBuilder {
	for _, n := range slices.Sorted(maps.Keys(units)) {
		b.WithUnit(n, units[n])
	}
	return b
}

// WithEntries appends entries to the list section.list ("storage",
// "disks"; "passwd", "users").
func (b *IgnitionBuilder) WithEntries(section, list string, entries ...Entry) *IgnitionBuilder {
	if len(entries) == 0 {
		return b
	}
	s, _ := b.cfg[section].(map[string]any)
	if s == nil {
		s = map[string]any{}
		b.cfg[section] = s
	}
	l, _ := s[list].([]any)
	for _, e := range entries {
		l = append(l, map[string]any(e))
	}
	s[list] = l
	return b
}

// Merge sets the top-level sections of cfg, a config written by hand (its
// "ignition" section, if any, replaces the version; a section it has
// replaces what the builder put there).
func (b *IgnitionBuilder) Merge(cfg map[string]any) *IgnitionBuilder {
	maps.Copy(b.cfg, cfg)
	return b
}

// Build is the config.
func (b *IgnitionBuilder) Build() map[string]any { return maps.Clone(b.cfg) }

// JSON is the config's JSON.
func (b *IgnitionBuilder) JSON() []byte { return mustJSON(b.cfg) }

// MachineConfigBuilder builds a MachineConfig.
type MachineConfigBuilder struct {
	name   string
	labels map[string]string
	ign    *IgnitionBuilder
	raw    []byte // a config given as is
	spec   map[string]any
	plans  []ndpmcv1.PostConfigActions
}

// MachineConfig starts a MachineConfig with an empty Ignition config.
func MachineConfig(name string) *MachineConfigBuilder {
	return &MachineConfigBuilder{name: name, ign: Ignition(), spec: map[string]any{}}
}

// WithLabel sets a label.
func (b *MachineConfigBuilder) WithLabel(key, value string) *MachineConfigBuilder {
	if b.labels == nil {
		b.labels = map[string]string{}
	}
	b.labels[key] = value
	return b
}

// WithRole makes it a source MachineConfig of pool.
func (b *MachineConfigBuilder) WithRole(pool string) *MachineConfigBuilder {
	return b.WithLabel(ndpmcv1.RoleLabel, pool)
}

// RenderedFor makes it the rendered MachineConfig of pool.
func (b *MachineConfigBuilder) RenderedFor(pool string) *MachineConfigBuilder {
	return b.WithLabel(ndpmcv1.RenderedForLabel, pool)
}

// WithIgnition replaces the Ignition config.
func (b *MachineConfigBuilder) WithIgnition(ign *IgnitionBuilder) *MachineConfigBuilder {
	b.ign, b.raw = ign, nil
	return b
}

// WithConfig sets the sections of an Ignition config written by hand (see
// IgnitionBuilder.Merge).
func (b *MachineConfigBuilder) WithConfig(cfg map[string]any) *MachineConfigBuilder {
	b.ign.Merge(cfg)
	return b
}

// WithRawConfig sets spec.config to raw as is, valid or not.
func (b *MachineConfigBuilder) WithRawConfig(raw string) *MachineConfigBuilder {
	b.raw = []byte(raw)
	return b
}

// WithIgnitionVersion sets the Ignition version.
func (b *MachineConfigBuilder) WithIgnitionVersion(v string) *MachineConfigBuilder {
	b.ign.WithVersion(v)
	return b
}

// WithFile adds a file with plain data-URL contents.
func (b *MachineConfigBuilder) WithFile(path, contents string) *MachineConfigBuilder {
	b.ign.WithFile(path, contents)
	return b
}

// WithFiles adds files (File, FileB64, or any entry).
func (b *MachineConfigBuilder) WithFiles(files ...Entry) *MachineConfigBuilder {
	b.ign.WithFiles(files...)
	return b
}

// WithFileMap adds files: see IgnitionBuilder.WithFileMap.
func (b *MachineConfigBuilder) WithFileMap(files map[string]string, mode int) *MachineConfigBuilder {
	b.ign.WithFileMap(files, mode)
	return b
}

// WithUnit adds a systemd unit.
func (b *MachineConfigBuilder) WithUnit(name, contents string) *MachineConfigBuilder {
	b.ign.WithUnit(name, contents)
	return b
}

// WithUnitMap adds units (name → contents).
func (b *MachineConfigBuilder) WithUnitMap(units map[string]string) *MachineConfigBuilder {
	b.ign.WithUnitMap(units)
	return b
}

// WithEntries appends entries to an Ignition list (see
// IgnitionBuilder.WithEntries).
func (b *MachineConfigBuilder) WithEntries(section, list string, entries ...Entry) *MachineConfigBuilder {
	b.ign.WithEntries(section, list, entries...)
	return b
}

// WithKernelArguments sets spec.kernelArguments.
func (b *MachineConfigBuilder) WithKernelArguments(args ...string) *MachineConfigBuilder {
	return b.WithSpec("kernelArguments", args)
}

// WithOSImageURL sets spec.osImageURL.
func (b *MachineConfigBuilder) WithOSImageURL(image string) *MachineConfigBuilder {
	return b.WithSpec("osImageURL", image)
}

// WithSpec sets any other spec field, by its JSON name (kernelType,
// extensions, fips, ...).
func (b *MachineConfigBuilder) WithSpec(field string, value any) *MachineConfigBuilder {
	b.spec[field] = value
	return b
}

// WithSpecFields sets spec fields by their JSON names (a spec written by
// hand, beside spec.config).
func (b *MachineConfigBuilder) WithSpecFields(fields map[string]any) *MachineConfigBuilder {
	maps.Copy(b.spec, fields)
	return b
}

// WithPlans sets status.postConfigActions (Build only: the API server
// takes them through the status subresource).
func (b *MachineConfigBuilder) WithPlans(plans ...ndpmcv1.PostConfigActions) *MachineConfigBuilder {
	b.plans = plans
	return b
}

func (b *MachineConfigBuilder) config() []byte {
	if b.raw != nil {
		return b.raw
	}
	return b.ign.JSON()
}

// Build is the MachineConfig.
func (b *MachineConfigBuilder) Build() *ndpmcv1.MachineConfig {
	mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: b.name, Labels: maps.Clone(b.labels)}}
	if len(b.spec) > 0 {
		if err := json.Unmarshal(mustJSON(b.spec), &mc.Spec); err != nil {
			panic("builder: spec: " + err.Error())
		}
	}
	mc.Spec.Config = runtime.RawExtension{Raw: b.config()}
	mc.Status.PostConfigActions = b.plans
	return mc
}

// Document is the MachineConfig's JSON document: apiVersion, kind,
// metadata (name, labels) and spec.
func (b *MachineConfigBuilder) Document() []byte {
	spec := maps.Clone(b.spec)
	spec["config"] = json.RawMessage(b.config())
	meta := map[string]any{"name": b.name}
	if len(b.labels) > 0 {
		meta["labels"] = b.labels
	}
	return mustJSON(map[string]any{
		"apiVersion": mcfgv1.GroupVersion.String(),
		"kind":       "MachineConfig",
		"metadata":   meta,
		"spec":       spec,
	})
}

// Config is the MachineConfig as the planner reads it: Document parsed by
// machineconfig.Parse (as from the file name.yaml). A document that does
// not parse fails the test.
func (b *MachineConfigBuilder) Config(t testing.TB) *machineconfig.Config {
	t.Helper()
	cfg, err := machineconfig.Parse(b.name+".yaml", b.Document())
	if err != nil {
		t.Fatalf("parsing %s: %v", b.name, err)
	}
	return cfg
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("builder: " + err.Error())
	}
	return b
}
