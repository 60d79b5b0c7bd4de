package mcorules

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type specList = []operatorv1.NodeDisruptionPolicySpecAction

// defaultsSpec is the MCO's default list written as a user's spec, without
// the registries.conf entry: Special is the operator's, not the API's.
func defaultsSpec() operatorv1.NodeDisruptionPolicyConfig {
	conv := func(in []operatorv1.NodeDisruptionPolicyStatusAction) specList {
		out := specList{}
		for _, a := range in {
			out = append(out, operatorv1.NodeDisruptionPolicySpecAction{
				Type: operatorv1.NodeDisruptionPolicySpecActionType(a.Type), Reload: a.Reload, Restart: a.Restart,
			})
		}
		return out
	}
	d := Defaults()
	var spec operatorv1.NodeDisruptionPolicyConfig
	for _, f := range d.Files {
		if f.Path != RegistriesConfPath {
			spec.Files = append(spec.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: f.Path, Actions: conv(f.Actions)})
		}
	}
	for _, u := range d.Units {
		spec.Units = append(spec.Units, operatorv1.NodeDisruptionPolicySpecUnit{Name: u.Name, Actions: conv(u.Actions)})
	}
	spec.SSHKey.Actions = conv(d.SSHKey.Actions)
	return spec
}

func specFiles(n int, actions specList) []operatorv1.NodeDisruptionPolicySpecFile {
	var out []operatorv1.NodeDisruptionPolicySpecFile
	for i := range n {
		out = append(out, operatorv1.NodeDisruptionPolicySpecFile{Path: fmt.Sprintf("/etc/f%d", i), Actions: actions})
	}
	return out
}

// badAt is n files, those at bad with a service name that is no unit's.
func badAt(n int, bad ...int) operatorv1.NodeDisruptionPolicyConfig {
	spec := operatorv1.NodeDisruptionPolicyConfig{Files: specFiles(n, specList{specOnly(operatorv1.DrainSpecAction)})}
	for _, i := range bad {
		spec.Files[i].Actions = specList{specRestart("x")}
	}
	return spec
}

func oneFile(actions ...operatorv1.NodeDisruptionPolicySpecAction) operatorv1.NodeDisruptionPolicyConfig {
	return operatorv1.NodeDisruptionPolicyConfig{Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/a", Actions: actions}}}
}

func TestValidate(t *testing.T) {
	drain := specOnly(operatorv1.DrainSpecAction)
	reload := func(svc string) operatorv1.NodeDisruptionPolicySpecAction {
		return operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.ReloadSpecAction, Reload: &operatorv1.ReloadService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(svc)}}
	}
	restartAndReload := specRestart("a.service")
	restartAndReload.Reload = &operatorv1.ReloadService{ServiceName: "a.service"}
	const ndp = "spec.nodeDisruptionPolicy"
	for _, tc := range []struct {
		name   string
		spec   operatorv1.NodeDisruptionPolicyConfig
		field  string          // of the first error; "" when valid
		typ    field.ErrorType // of the first error
		detail string          // in the first error
	}{
		{name: "empty", spec: operatorv1.NodeDisruptionPolicyConfig{}},
		{name: "the defaults as a spec", spec: defaultsSpec()},
		{name: "50 files, 10 actions each", spec: operatorv1.NodeDisruptionPolicyConfig{Files: specFiles(50, specList{drain, drain, drain, drain, drain, drain, drain, drain, drain, drain})}},
		// The API server accepts both (its schema has no minLength or
		// minItems there): so does Validate.
		{name: "empty path, no actions", spec: operatorv1.NodeDisruptionPolicyConfig{Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "", Actions: specList{}}}}},

		{name: "service name not a unit", spec: oneFile(drain, specRestart("not a unit")),
			field: ndp + ".files[0].actions[1].restart.serviceName", typ: field.ErrorTypeInvalid, detail: "Invalid ${SERVICETYPE} in service name"},
		{name: "unit name not a unit", spec: operatorv1.NodeDisruptionPolicyConfig{Units: []operatorv1.NodeDisruptionPolicySpecUnit{{Name: "chronyd", Actions: specList{drain}}}},
			field: ndp + ".units[0].name", typ: field.ErrorTypeInvalid, detail: "Invalid ${SERVICETYPE} in service name"},
		{name: "service name too long", spec: oneFile(reload(strings.Repeat("a", 250) + ".service")),
			field: ndp + ".files[0].actions[0].reload.serviceName", typ: field.ErrorTypeTooLong},
		{name: "51 files", spec: operatorv1.NodeDisruptionPolicyConfig{Files: specFiles(51, specList{drain})},
			field: ndp + ".files", typ: field.ErrorTypeTooMany, detail: "must have at most 50 items"},
		{name: "11 actions", spec: oneFile(drain, drain, drain, drain, drain, drain, drain, drain, drain, drain, drain),
			field: ndp + ".files[0].actions", typ: field.ErrorTypeTooMany, detail: "must have at most 10 items"},
		{name: "Reboot with another action", spec: operatorv1.NodeDisruptionPolicyConfig{Units: []operatorv1.NodeDisruptionPolicySpecUnit{{Name: "a.service", Actions: specList{specOnly(operatorv1.RebootSpecAction), drain}}}},
			field: ndp + ".units[0].actions", typ: field.ErrorTypeInvalid, detail: "Reboot action can only be specified standalone"},
		{name: "None with another action", spec: oneFile(drain, specOnly(operatorv1.NoneSpecAction)),
			field: ndp + ".files[0].actions", typ: field.ErrorTypeInvalid, detail: "None action can only be specified standalone"},
		{name: "Special in a file", spec: oneFile(specOnly(operatorv1.NodeDisruptionPolicySpecActionType(operatorv1.SpecialStatusAction))),
			field: ndp + ".files[0].actions[0].type", typ: field.ErrorTypeNotSupported, detail: `"Special"`},
		{name: "Special for the SSH key", spec: operatorv1.NodeDisruptionPolicyConfig{SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: specList{{Type: "Special"}}}},
			field: ndp + ".sshkey.actions[0].type", typ: field.ErrorTypeNotSupported, detail: `"Special"`},
		{name: "Reload without reload", spec: oneFile(specOnly(operatorv1.ReloadSpecAction)),
			field: ndp + ".files[0].actions[0]", typ: field.ErrorTypeInvalid, detail: "reload is required when type is Reload, and forbidden otherwise"},
		{name: "Restart without restart", spec: oneFile(specOnly(operatorv1.RestartSpecAction)),
			field: ndp + ".files[0].actions[0]", typ: field.ErrorTypeInvalid, detail: "restart is required when type is Restart, and forbidden otherwise"},
		{name: "Restart with reload", spec: oneFile(restartAndReload),
			field: ndp + ".files[0].actions[0]", typ: field.ErrorTypeInvalid, detail: "reload is required when type is Reload, and forbidden otherwise"},
		{name: "Restart with an empty service", spec: oneFile(specRestart("")),
			field: ndp + ".files[0].actions[0].restart.serviceName", typ: field.ErrorTypeInvalid, detail: "in service name"},
		{name: "a file without actions", spec: operatorv1.NodeDisruptionPolicyConfig{Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/a"}}},
			field: ndp + ".files[0].actions", typ: field.ErrorTypeRequired},
		{name: "duplicate path", spec: operatorv1.NodeDisruptionPolicyConfig{Files: append(specFiles(2, specList{drain}), specFiles(1, specList{drain})...)},
			field: ndp + ".files[2]", typ: field.ErrorTypeDuplicate, detail: `{"path":"/etc/f0"}`},
		{name: "duplicate unit", spec: operatorv1.NodeDisruptionPolicyConfig{Units: []operatorv1.NodeDisruptionPolicySpecUnit{{Name: "a.service", Actions: specList{drain}}, {Name: "a.service", Actions: specList{drain}}}},
			field: ndp + ".units[1]", typ: field.ErrorTypeDuplicate, detail: `{"name":"a.service"}`},
		{name: "the first error by field, indices as numbers", spec: badAt(11, 10, 2),
			field: ndp + ".files[2].actions[0].restart.serviceName", typ: field.ErrorTypeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.spec)
			all := ValidateAll(tc.spec)
			if tc.field == "" {
				if err != nil || len(all) > 0 {
					t.Fatalf("refused: %v\n%v", err, all)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *FieldError on %s", err, tc.field)
			}
			var ke *field.Error
			if fe.Field != tc.field || !errors.As(err, &ke) || ke.Type != tc.typ || !strings.Contains(fe.Err.Error(), tc.detail) {
				t.Fatalf("got %q (%v), want %s on %s with %q", err, ke, tc.typ, tc.field, tc.detail)
			}
			if want := tc.field + ": " + ke.ErrorBody(); err.Error() != want {
				t.Errorf("error reads %q, want %q", err, want)
			}
			if len(all) == 0 || all[0].Field != fe.Field {
				t.Errorf("ValidateAll %v does not start with Validate's error", all)
			}
			for _, e := range all {
				if !strings.HasPrefix(e.Field, ndp) {
					t.Errorf("error outside %s: %v", ndp, e)
				}
			}
		})
	}
}

// ValidateAll gives every error, each naming its entry, so that a caller
// can drop the bad entries; the CEL rules are skipped, and it says so, once
// the schema refused an enum or a limit, as the API server does.
func TestValidateAll(t *testing.T) {
	spec := oneFile(specRestart("bad"))
	spec.Files = append(spec.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: "/etc/b", Actions: specList{specOnly(operatorv1.RebootSpecAction), specOnly(operatorv1.DrainSpecAction)}})
	spec.Units = []operatorv1.NodeDisruptionPolicySpecUnit{{Name: "a.service", Actions: specList{specOnly(operatorv1.NoneSpecAction)}}, {Name: "a.service", Actions: specList{specOnly(operatorv1.NoneSpecAction)}}}
	var got []string
	for _, e := range ValidateAll(spec) {
		got = append(got, fmt.Sprintf("%s %s", e.Field, e.Type))
	}
	want := []string{
		"spec.nodeDisruptionPolicy.units[1] Duplicate value", // the list types, then the CEL rules
		"spec.nodeDisruptionPolicy.files[0].actions[0].restart.serviceName Invalid value",
		"spec.nodeDisruptionPolicy.files[0].actions[0].restart.serviceName Invalid value", // the two rules on service names
		"spec.nodeDisruptionPolicy.files[1].actions Invalid value",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	spec.SSHKey.Actions = specList{{Type: "Special"}}
	all := ValidateAll(spec)
	if len(all) != 3 || all[0].Field != "spec.nodeDisruptionPolicy.sshkey.actions[0].type" || all[1].Type != field.ErrorTypeDuplicate ||
		all[2].Field != "spec.nodeDisruptionPolicy" || !strings.Contains(all[2].Detail, "some validation rules were not checked") {
		t.Errorf("with an unsupported type: %v", all)
	}
}

func TestCompareFields(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"files[2]", "files[10]", -1},
		{"files[10].path", "files[9]", 1},
		{"files[02]", "files[2]", 0},
		{"files", "files[0]", -1},
		{"files[1]", "units[0]", -1},
		{"a", "a", 0},
	} {
		if got := compareFields(tc.a, tc.b); got != tc.want {
			t.Errorf("compareFields(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// The CRD is compiled once, for every call.
func TestValidatorCompiledOnce(t *testing.T) {
	a, err := mcoValidator()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := mcoValidator(); a != b || a.cel == nil {
		t.Errorf("validator %p then %p, CEL %v", a, b, a.cel)
	}
}

func BenchmarkValidate(b *testing.B) {
	spec := defaultsSpec()
	for b.Loop() {
		if err := Validate(spec); err != nil {
			b.Fatal(err)
		}
	}
}
