package mcoentries

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// MachineConfigurationName is the one MachineConfiguration the MCO reads.
const MachineConfigurationName = "cluster"

// GuardAnnotation, on MachineConfiguration cluster, lists the subjects of
// ndp's per-update entries, one a line ("file:/etc/kubernetes/kubelet.conf",
// "unit:foo.service", "sshkey"). ndp writes it with the entries in one
// apply, and before them when it adds some: while it stands, the admission
// guard (manifests' ValidatingAdmissionPolicy ndp-mco-update-entries,
// which reads it in the API server, ndp running or not) refuses any other
// change to those paths. Removing it releases the guard.
const GuardAnnotation = "ndp.dev/update-entries"

// Guarded is the subjects a MachineConfiguration's guard annotation lists.
func Guarded(mc *operatorv1.MachineConfiguration) []string {
	if mc == nil {
		return nil
	}
	return ParseGuard(mc.Annotations[GuardAnnotation])
}

// ParseGuard splits the guard annotation's value.
func ParseGuard(v string) []string {
	var out []string
	for _, s := range strings.Split(v, "\n") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// ApplyObject is what ndp applies to MachineConfiguration cluster under
// FieldManager: its entries and, when there are any, the guard annotation
// naming guarded. Every field it leaves out that ndp owned before is
// removed by the API server (server-side apply); nothing another manager
// owns is touched.
func ApplyObject(entries Entries, guarded []string) (*unstructured.Unstructured, error) {
	e := Sorted(entries)
	npc := map[string]any{}
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&e)
	if err != nil {
		return nil, fmt.Errorf("converting ndp's entries: %w", err)
	}
	for _, k := range []string{"files", "units"} {
		if v, ok := spec[k].([]any); ok && len(v) > 0 {
			npc[k] = v
		}
	}
	if ssh, ok := spec["sshkey"].(map[string]any); ok {
		if acts, ok := ssh["actions"].([]any); ok && len(acts) > 0 {
			npc["sshkey"] = ssh
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": operatorv1.GroupVersion.String(),
		"kind":       "MachineConfiguration",
		"metadata":   map[string]any{"name": MachineConfigurationName},
	}}
	if len(npc) > 0 {
		u.Object["spec"] = map[string]any{"nodeDisruptionPolicy": npc}
	}
	if len(guarded) > 0 {
		g := append([]string(nil), guarded...)
		sort.Strings(g)
		u.SetAnnotations(map[string]string{GuardAnnotation: strings.Join(g, "\n")})
	}
	return u, nil
}

// Ownership is who owns which entry of spec.nodeDisruptionPolicy.
type Ownership struct {
	// Mine are the subjects FieldManager owns; Others, each other
	// manager's ("file:/etc/chrony.conf" → managers).
	Mine   map[string]bool
	Others map[string][]string
}

// OwnershipOf reads a MachineConfiguration's managedFields.
func OwnershipOf(mc *operatorv1.MachineConfiguration) (Ownership, error) {
	o := Ownership{Mine: map[string]bool{}, Others: map[string][]string{}}
	for _, mf := range mc.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		subjects, err := subjectsOf(mf.FieldsV1.Raw)
		if err != nil {
			return o, fmt.Errorf("MachineConfiguration %s: managedFields of %q: %w", mc.Name, mf.Manager, err)
		}
		for _, s := range subjects {
			if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
				o.Mine[s] = true
			} else if !contains(o.Others[s], mf.Manager) {
				o.Others[s] = append(o.Others[s], mf.Manager)
			}
		}
	}
	return o, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// subjectsOf lists the entries a manager's field set holds.
func subjectsOf(raw []byte) ([]string, error) {
	var set fieldpath.Set
	if err := set.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	npc := set.WithPrefix(fieldpath.PathElement{FieldName: ptr.To("spec")}).WithPrefix(fieldpath.PathElement{FieldName: ptr.To("nodeDisruptionPolicy")})
	var out []string
	for _, list := range []struct{ field, key, kind string }{{"files", "path", "file:"}, {"units", "name", "unit:"}} {
		items := npc.WithPrefix(fieldpath.PathElement{FieldName: ptr.To(list.field)})
		items.Children.Iterate(func(pe fieldpath.PathElement) {
			if pe.Key == nil {
				return
			}
			for _, f := range *pe.Key {
				if f.Name == list.key && f.Value.IsString() {
					out = append(out, list.kind+f.Value.AsString())
				}
			}
		})
		// A field set that names the item itself (k:{...}) without children
		// lists it in Members.
		items.Members.Iterate(func(pe fieldpath.PathElement) {
			if pe.Key == nil {
				return
			}
			for _, f := range *pe.Key {
				if f.Name == list.key && f.Value.IsString() && !contains(out, list.kind+f.Value.AsString()) {
					out = append(out, list.kind+f.Value.AsString())
				}
			}
		})
	}
	ssh := npc.WithPrefix(fieldpath.PathElement{FieldName: ptr.To("sshkey")})
	if !ssh.Empty() {
		out = append(out, "sshkey")
	}
	return out, nil
}

// Others is the part of spec that another manager owns: the
// administrator's entries (an entry ndp and another manager both own,
// with equal values, counts as theirs too).
func Others(spec Entries, own Ownership) Entries {
	var out Entries
	for _, f := range spec.Files {
		if len(own.Others["file:"+f.Path]) > 0 || !own.Mine["file:"+f.Path] {
			out.Files = append(out.Files, *f.DeepCopy())
		}
	}
	for _, u := range spec.Units {
		if len(own.Others["unit:"+string(u.Name)]) > 0 || !own.Mine["unit:"+string(u.Name)] {
			out.Units = append(out.Units, *u.DeepCopy())
		}
	}
	if len(spec.SSHKey.Actions) > 0 && (len(own.Others["sshkey"]) > 0 || !own.Mine["sshkey"]) {
		out.SSHKey = *spec.SSHKey.DeepCopy()
	}
	return out
}

// Conflict is an entry of ndp's that another manager's entry for the same
// path or unit holds with other actions: ndp never forces it.
type Conflict struct {
	Subject  string   `json:"subject"`
	Managers []string `json:"managers"`
}

func (c Conflict) String() string {
	return fmt.Sprintf("%s: MachineConfiguration cluster has another entry for it (field manager %s); ndp does not overwrite it", SubjectText(c.Subject), strings.Join(c.Managers, ", "))
}

// SubjectText is "file /etc/x" for "file:/etc/x", as people read it.
func SubjectText(s string) string {
	k, v, ok := strings.Cut(s, ":")
	if !ok {
		return s
	}
	return k + " " + v
}

// Conflicts lists ndp's entries that other managers' entries for the same
// subject hold differently, and returns want without them: they are
// reported, never applied (an apply would fail on them, and a forced one
// would take the administrator's entry).
func Conflicts(want, spec Entries, own Ownership) (Entries, []Conflict) {
	var out Entries
	var cs []Conflict
	for _, f := range want.Files {
		s := "file:" + f.Path
		if m := own.Others[s]; len(m) > 0 {
			if cur, ok := fileOf(spec, f.Path); ok && !sameActions(cur.Actions, f.Actions) {
				cs = append(cs, Conflict{Subject: s, Managers: m})
				continue
			}
		}
		out.Files = append(out.Files, f)
	}
	for _, u := range want.Units {
		s := "unit:" + string(u.Name)
		if m := own.Others[s]; len(m) > 0 {
			if cur, ok := unitOf(spec, string(u.Name)); ok && !sameActions(cur.Actions, u.Actions) {
				cs = append(cs, Conflict{Subject: s, Managers: m})
				continue
			}
		}
		out.Units = append(out.Units, u)
	}
	if len(want.SSHKey.Actions) > 0 {
		if m := own.Others["sshkey"]; len(m) > 0 && !sameActions(spec.SSHKey.Actions, want.SSHKey.Actions) {
			cs = append(cs, Conflict{Subject: "sshkey", Managers: m})
		} else {
			out.SSHKey = want.SSHKey
		}
	}
	return out, cs
}

func fileOf(e Entries, p string) (operatorv1.NodeDisruptionPolicySpecFile, bool) {
	for _, f := range e.Files {
		if f.Path == p {
			return f, true
		}
	}
	return operatorv1.NodeDisruptionPolicySpecFile{}, false
}

func unitOf(e Entries, n string) (operatorv1.NodeDisruptionPolicySpecUnit, bool) {
	for _, u := range e.Units {
		if string(u.Name) == n {
			return u, true
		}
	}
	return operatorv1.NodeDisruptionPolicySpecUnit{}, false
}

func sameActions(a, b []operatorv1.NodeDisruptionPolicySpecAction) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// conflictField matches a server-side apply conflict's field, e.g.
// .spec.nodeDisruptionPolicy.files[path="/etc/chrony.conf"].actions
var conflictField = regexp.MustCompile(`\.spec\.nodeDisruptionPolicy\.(files|units)\[(?:path|name)="([^"]*)"\]|\.spec\.nodeDisruptionPolicy\.sshkey`)

// ApplyConflicts are the subjects a refused apply names as held by another
// manager; nil for any other error. A conflict ndp did not foresee (an
// entry written between its read and its apply) is reported like the
// others, on the next reconcile.
func ApplyConflicts(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsConflict(err) || status.Status().Details == nil {
		return nil
	}
	var out []string
	for _, c := range status.Status().Details.Causes {
		m := conflictField.FindStringSubmatch(c.Field)
		switch {
		case m == nil:
		case m[1] == "files":
			out = append(out, "file:"+m[2])
		case m[1] == "units":
			out = append(out, "unit:"+m[2])
		default:
			out = append(out, "sshkey")
		}
	}
	return out
}

// Without is e without the entries of subjects.
func Without(e Entries, subjects []string) Entries {
	drop := map[string]bool{}
	for _, s := range subjects {
		drop[s] = true
	}
	var out Entries
	for _, f := range e.Files {
		if !drop["file:"+f.Path] {
			out.Files = append(out.Files, f)
		}
	}
	for _, u := range e.Units {
		if !drop["unit:"+string(u.Name)] {
			out.Units = append(out.Units, u)
		}
	}
	if !drop["sshkey"] {
		out.SSHKey = e.SSHKey
	}
	return out
}
