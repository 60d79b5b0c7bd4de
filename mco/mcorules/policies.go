package mcorules

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/manifests/crds"
)

// Paths and units of the MCO's default policies (pkg/daemon/constants).
const (
	pathKubeletAuth            = "/var/lib/kubelet/config.json"
	pathGPGNoReboot            = "/etc/machine-config-daemon/no-reboot/containers-gpg.pub"
	pathPolicyJSON             = "/etc/containers/policy.json"
	pathRegistriesD            = "/etc/containers/registries.d"
	pathCrioPolicies           = "/etc/crio/policies"
	pathNMStateOpenShift       = "/etc/nmstate/openshift"
	pathUserCABundle           = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"
	pathCredentialProviders    = "/etc/kubernetes/credential-providers"
	pathCrioCredProviderDropIn = "/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf"
	pathIRIRegistry            = "/etc/iri-registry"
	pathIRILoadImage           = "/usr/local/bin/load-registry-image.sh"
	pathIRIRootCA              = "/etc/pki/ca-trust/source/anchors/iri-root-ca.crt"
	serviceUpdateCATrust       = "coreos-update-ca-trust.service"
	serviceIRIRegistry         = "iri-registry.service"
	serviceCrio                = "crio.service"
	serviceKubelet             = "kubelet.service"
)

func reload(svc string) operatorv1.NodeDisruptionPolicyStatusAction {
	return operatorv1.NodeDisruptionPolicyStatusAction{Type: operatorv1.ReloadStatusAction, Reload: &operatorv1.ReloadService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(svc)}}
}

func restart(svc string) operatorv1.NodeDisruptionPolicyStatusAction {
	return operatorv1.NodeDisruptionPolicyStatusAction{Type: operatorv1.RestartStatusAction, Restart: &operatorv1.RestartService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(svc)}}
}

func only(t operatorv1.NodeDisruptionPolicyStatusActionType) operatorv1.NodeDisruptionPolicyStatusAction {
	return operatorv1.NodeDisruptionPolicyStatusAction{Type: t}
}

func file(path string, a ...operatorv1.NodeDisruptionPolicyStatusAction) operatorv1.NodeDisruptionPolicyStatusFile {
	return operatorv1.NodeDisruptionPolicyStatusFile{Path: path, Actions: a}
}

// Defaults is the MCO's default cluster policy list at the reference
// commit (apihelpers.go defaultClusterPolicies, as MCO-BEHAVIOUR.md §1.5
// gives it), in its order: the one copy of the MCO's list. ndp's built-in
// defaults are not it (mcoimport names the differences). It changes
// between releases (the OpenShift docs list
// /etc/mco/internal-registry-pull-secret.json, gone here): on a cluster,
// read MachineConfiguration cluster's status (PoliciesOf) rather than this.
func Defaults() Policies {
	return Policies{
		Files: []operatorv1.NodeDisruptionPolicyStatusFile{
			file(pathKubeletAuth, only(operatorv1.NoneStatusAction)),
			file(pathGPGNoReboot, reload(serviceCrio)),
			file(pathPolicyJSON, reload(serviceCrio)),
			file(RegistriesConfPath, only(operatorv1.SpecialStatusAction)),
			file(pathRegistriesD, reload(serviceCrio)),
			file(pathCrioPolicies, reload(serviceCrio)),
			file(pathNMStateOpenShift, only(operatorv1.NoneStatusAction)),
			file(pathUserCABundle, restart(serviceUpdateCATrust), restart(serviceCrio)),
			file(pathCredentialProviders, restart(serviceKubelet)),
			file(pathCrioCredProviderDropIn, only(operatorv1.DaemonReloadStatusAction), restart(serviceKubelet)),
			file(pathIRIRegistry, restart(serviceIRIRegistry)),
			file(pathIRILoadImage, restart(serviceIRIRegistry)),
			file(pathIRIRootCA, restart(serviceUpdateCATrust)),
		},
		Units: []operatorv1.NodeDisruptionPolicyStatusUnit{{
			Name:    serviceIRIRegistry,
			Actions: []operatorv1.NodeDisruptionPolicyStatusAction{only(operatorv1.DaemonReloadStatusAction), restart(serviceIRIRegistry)},
		}},
		SSHKey: operatorv1.NodeDisruptionPolicyStatusSSHKey{
			Actions: []operatorv1.NodeDisruptionPolicyStatusAction{only(operatorv1.NoneStatusAction)},
		},
	}
}

// MergePolicies merges a MachineConfiguration's spec.nodeDisruptionPolicy
// with the defaults, as the MCO's operator does (MergeClusterPolicies): the
// defaults first; a user entry whose path (unit name) equals a default's
// replaces that default in place, any other is appended in the user's
// order; the user's SSH policy replaces the default only when it has
// actions.
func MergePolicies(spec operatorv1.NodeDisruptionPolicyConfig) Policies {
	return MergePoliciesOver(Defaults(), spec)
}

// MergePoliciesOver is MergePolicies over another default list, such as
// the one of an MCO release before the reference (the list changes between
// releases), made from Defaults and that release's differences. def is not
// modified.
func MergePoliciesOver(def Policies, spec operatorv1.NodeDisruptionPolicyConfig) Policies {
	def = *def.DeepCopy()
	out := Policies{SSHKey: def.SSHKey}
	out.Files = append(out.Files, def.Files...)
	for _, f := range spec.Files {
		e := operatorv1.NodeDisruptionPolicyStatusFile{Path: f.Path, Actions: specActions(f.Actions)}
		if i := indexFile(def.Files, f.Path); i >= 0 {
			out.Files[i] = e
		} else {
			out.Files = append(out.Files, e)
		}
	}
	out.Units = append(out.Units, def.Units...)
	for _, u := range spec.Units {
		e := operatorv1.NodeDisruptionPolicyStatusUnit{Name: u.Name, Actions: specActions(u.Actions)}
		if i := indexUnit(def.Units, u.Name); i >= 0 {
			out.Units[i] = e
		} else {
			out.Units = append(out.Units, e)
		}
	}
	if len(spec.SSHKey.Actions) > 0 {
		out.SSHKey = operatorv1.NodeDisruptionPolicyStatusSSHKey{Actions: specActions(spec.SSHKey.Actions)}
	}
	return out
}

func indexFile(files []operatorv1.NodeDisruptionPolicyStatusFile, path string) int {
	for i, f := range files {
		if f.Path == path {
			return i
		}
	}
	return -1
}

func indexUnit(units []operatorv1.NodeDisruptionPolicyStatusUnit, name operatorv1.NodeDisruptionPolicyServiceName) int {
	for i, u := range units {
		if u.Name == name {
			return i
		}
	}
	return -1
}

// specActions converts spec actions to status actions. The API server's
// validation guarantees a Reload or Restart names its service (Validate
// checks a MachineConfiguration read from a file); one that does not is
// kept with an empty service.
func specActions(in []operatorv1.NodeDisruptionPolicySpecAction) []operatorv1.NodeDisruptionPolicyStatusAction {
	out := []operatorv1.NodeDisruptionPolicyStatusAction{}
	for _, a := range in {
		s := operatorv1.NodeDisruptionPolicyStatusAction{Type: operatorv1.NodeDisruptionPolicyStatusActionType(a.Type)}
		switch a.Type {
		case operatorv1.ReloadSpecAction:
			s.Reload = &operatorv1.ReloadService{}
			if a.Reload != nil {
				s.Reload.ServiceName = a.Reload.ServiceName
			}
		case operatorv1.RestartSpecAction:
			s.Restart = &operatorv1.RestartService{}
			if a.Restart != nil {
				s.Restart.ServiceName = a.Restart.ServiceName
			}
		}
		out = append(out, s)
	}
	return out
}

// PoliciesOf is the policy list the MCO's daemon would use with this
// MachineConfiguration cluster (nil: none exists, the defaults; the
// operator creates it). The status is used when it is current
// (metadata.generation == status.observedGeneration, on a stored object);
// when it is stale the daemon waits for the operator (up to 2 minutes per
// attempt, then Degraded and a retry) and then uses what the operator
// writes: the spec merged with the defaults, which is what this returns
// then, with Stale set. An object that was never stored (generation 0, a
// file) has no status to trust: its spec is merged.
func PoliciesOf(mc *operatorv1.MachineConfiguration) (Policies, PolicySource) {
	if mc == nil {
		return Defaults(), PolicySource{From: "defaults"}
	}
	src := PolicySource{Generation: mc.Generation, ObservedGeneration: mc.Status.ObservedGeneration}
	if mc.Generation > 0 && mc.Generation == mc.Status.ObservedGeneration {
		src.From = "status"
		return *mc.Status.NodeDisruptionPolicyStatus.ClusterPolicies.DeepCopy(), src
	}
	src.From = "spec"
	src.Stale = mc.Generation > 0
	return MergePolicies(mc.Spec.NodeDisruptionPolicy), src
}

// OverridesOf is MachineConfiguration cluster's
// spec.irreconcilableValidationOverrides, which the daemon applies (the
// IrreconcilableMachineConfig gate is on at the reference commit).
func OverridesOf(mc *operatorv1.MachineConfiguration) operatorv1.IrreconcilableValidationOverrides {
	if mc == nil {
		return operatorv1.IrreconcilableValidationOverrides{}
	}
	return *mc.Spec.IrreconcilableValidationOverrides.DeepCopy()
}

// FieldError is a bad field of a MachineConfiguration's spec.
type FieldError struct {
	Field string // "spec.nodeDisruptionPolicy.files[0].actions[1].type"
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// fieldBody is a *field.Error without its field, which FieldError names:
// errors.As still finds the *field.Error (its Type, its BadValue).
type fieldBody struct{ err *field.Error }

func (b fieldBody) Error() string { return b.err.ErrorBody() }
func (b fieldBody) Unwrap() error { return b.err }

// Validate checks a MachineConfiguration's spec.nodeDisruptionPolicy as the
// API server would before the operator merges it, so that a file read
// offline fails with the field named instead of giving a decision the MCO
// could never make. It returns the first of ValidateAll's errors as a
// *FieldError (wrapping the *field.Error), or nil.
func Validate(spec operatorv1.NodeDisruptionPolicyConfig) error {
	errs := ValidateAll(spec)
	if len(errs) == 0 {
		return nil
	}
	return &FieldError{Field: errs[0].Field, Err: fieldBody{errs[0]}}
}

// ValidateAll is every error the API server would give for a
// MachineConfiguration cluster with this spec.nodeDisruptionPolicy,
// checked with the CRD it serves (the Default feature set's, embedded from
// openshift/api): the OpenAPI schema (types, enums, limits, required
// fields), the uniqueness of the files' paths and the units' names
// (x-kubernetes-list-type map: "Duplicate value") and the CRD's CEL rules
// (service names, Reboot and None standing alone, reload and restart given
// with their type only), in that order, by field within each. As the API
// server does, the CEL rules are not run when the schema already refused a
// type, an enum, a required field or a limit; an error on
// spec.nodeDisruptionPolicy then says so. Fields are JSON paths, e.g.
// spec.nodeDisruptionPolicy.files[0].actions[1].restart.serviceName.
//
// What the API server accepts is accepted: an empty path, an empty actions
// list (no action for that change). A spec with no SSH key actions is taken
// as one without sshkey (the typed spec cannot tell the two apart).
func ValidateAll(spec operatorv1.NodeDisruptionPolicyConfig) field.ErrorList {
	v, err := mcoValidator()
	if err != nil {
		// The embedded CRD is checked by the tests: this is a broken build.
		return field.ErrorList{field.InternalError(field.NewPath("spec", "nodeDisruptionPolicy"), err)}
	}
	obj, err := machineConfigurationObject(spec)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "nodeDisruptionPolicy"), err)}
	}
	return v.validate(obj)
}

// mcoCRDFile is the CRD the API server serves MachineConfiguration with on
// a cluster of the Default feature set, the one the MCO's docs describe.
const mcoCRDFile = "0000_80_machine-config_01_machineconfigurations-Default.crd.yaml"

// crdValidator is what the API server builds from a CRD to validate its
// objects on create (apiextensions-apiserver's customResourceStrategy).
type crdValidator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator // nil without CEL rules
}

// mcoValidator compiles the CRD once: decoding it and compiling its CEL
// rules takes milliseconds, and the webhook and the CLI validate often.
var mcoValidator = sync.OnceValues(func() (*crdValidator, error) {
	data, err := crds.File(mcoCRDFile)
	if err != nil {
		return nil, err
	}
	return newCRDValidator(data, operatorv1.GroupVersion.WithKind("MachineConfiguration"))
})

// newCRDValidator builds the validator of a CRD's version gvk.Version as
// the API server does: the v1 schema converted to the internal type, the
// structural schema, the OpenAPI validator and the CEL validator with the
// API server's per-call cost limit.
func newCRDValidator(data []byte, gvk schema.GroupVersionKind) (*crdValidator, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return nil, fmt.Errorf("CRD: %w", err)
	}
	if crd.Spec.Group != gvk.Group || crd.Spec.Names.Kind != gvk.Kind {
		return nil, fmt.Errorf("CRD %s is for %s %s, not %s", crd.Name, crd.Spec.Group, crd.Spec.Names.Kind, gvk.GroupKind())
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == gvk.Version })
	if i < 0 || crd.Spec.Versions[i].Schema == nil {
		return nil, fmt.Errorf("CRD %s has no schema for version %s", crd.Name, gvk.Version)
	}
	var internal apiextensions.CustomResourceValidation
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(crd.Spec.Versions[i].Schema, &internal, nil); err != nil {
		return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("CRD %s: not a structural schema: %w", crd.Name, err)
	}
	sv, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
	}
	return &crdValidator{structural: s, schema: sv, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}, nil
}

// validate is the API server's create-time validation of obj, after the
// decoding steps that change what is validated (nulls of non-nullable
// fields dropped, defaults applied); each step's errors sorted by field,
// as some of its steps walk maps.
func (v *crdValidator) validate(obj map[string]any) field.ErrorList {
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, v.structural)
	structuraldefaulting.Default(obj, v.structural)
	errs := sortedByField(apiservervalidation.ValidateCustomResource(nil, obj, v.schema))
	blocked := slices.ContainsFunc(errs, func(e *field.Error) bool {
		switch e.Type { // the API server's hasBlockingErr
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
		return false
	})
	errs = append(errs, sortedByField(structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj))...)
	switch {
	case v.cel == nil:
	case blocked:
		// The CEL cost estimates rely on the limits the schema checks.
		errs = append(errs, field.Invalid(field.NewPath("spec", "nodeDisruptionPolicy"), nil,
			"some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
	default:
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, sortedByField(celErrs)...)
	}
	return errs
}

// machineConfigurationObject is MachineConfiguration cluster with spec,
// as a client sends it (the typed spec's JSON), for the CRD's root.
func machineConfigurationObject(spec operatorv1.NodeDisruptionPolicyConfig) (map[string]any, error) {
	ndp, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec)
	if err != nil {
		return nil, err
	}
	if len(spec.SSHKey.Actions) == 0 {
		// sshkey is no pointer: a file without it decodes to this, and the
		// API server refuses sshkey: {} (actions are required).
		delete(ndp, "sshkey")
	}
	return map[string]any{
		"apiVersion": operatorv1.GroupVersion.String(),
		"kind":       "MachineConfiguration",
		"metadata":   map[string]any{"name": "cluster"},
		"spec":       map[string]any{"nodeDisruptionPolicy": ndp},
	}, nil
}

// sortedByField sorts errs by field, indices by number (files[2] before
// files[10]), keeping the order of errors on one field.
func sortedByField(errs field.ErrorList) field.ErrorList {
	slices.SortStableFunc(errs, func(a, b *field.Error) int { return compareFields(a.Field, b.Field) })
	return errs
}

// compareFields orders field paths with runs of digits compared as numbers.
func compareFields(a, b string) int {
	for a != "" && b != "" {
		if i, j := digits(a), digits(b); i > 0 && j > 0 {
			na, nb := strings.TrimLeft(a[:i], "0"), strings.TrimLeft(b[:j], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[i:], b[j:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}
