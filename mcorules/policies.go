package mcorules

import (
	"fmt"

	operatorv1 "github.com/openshift/api/operator/v1"
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
// commit (apihelpers.go defaultClusterPolicies), in its order. It changes
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
	def := Defaults()
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

func fieldError(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Validate checks what the API server's schema would of a
// MachineConfiguration's spec.nodeDisruptionPolicy before the operator
// merges it, so that a file read offline fails with the field named
// (a *FieldError) instead of giving a decision the MCO could never make:
// action types, the service of a Reload or Restart, Reboot and None
// standing alone, no repeated path or unit.
func Validate(spec operatorv1.NodeDisruptionPolicyConfig) error {
	check := func(field string, actions []operatorv1.NodeDisruptionPolicySpecAction) error {
		if len(actions) == 0 {
			return fieldError(field, "no actions")
		}
		for i, a := range actions {
			f := fmt.Sprintf("%s[%d]", field, i)
			switch a.Type {
			case operatorv1.ReloadSpecAction:
				if a.Reload == nil || a.Reload.ServiceName == "" {
					return fieldError(f+".reload.serviceName", "required for type Reload")
				}
			case operatorv1.RestartSpecAction:
				if a.Restart == nil || a.Restart.ServiceName == "" {
					return fieldError(f+".restart.serviceName", "required for type Restart")
				}
			case operatorv1.RebootSpecAction, operatorv1.NoneSpecAction:
				if len(actions) > 1 {
					return fieldError(f+".type", "%s must be the only action", a.Type)
				}
			case operatorv1.DrainSpecAction, operatorv1.DaemonReloadSpecAction:
			default:
				return fieldError(f+".type", "%q is not Reboot, Drain, Reload, Restart, DaemonReload or None", a.Type)
			}
		}
		return nil
	}
	seen := map[string]bool{}
	for i, f := range spec.Files {
		field := fmt.Sprintf("spec.nodeDisruptionPolicy.files[%d]", i)
		switch {
		case f.Path == "":
			return fieldError(field+".path", "required")
		case seen[f.Path]:
			return fieldError(field+".path", "%s given twice", f.Path)
		}
		seen[f.Path] = true
		if err := check(field+".actions", f.Actions); err != nil {
			return err
		}
	}
	seen = map[string]bool{}
	for i, u := range spec.Units {
		field := fmt.Sprintf("spec.nodeDisruptionPolicy.units[%d]", i)
		switch {
		case u.Name == "":
			return fieldError(field+".name", "required")
		case seen[string(u.Name)]:
			return fieldError(field+".name", "%s given twice", u.Name)
		}
		seen[string(u.Name)] = true
		if err := check(field+".actions", u.Actions); err != nil {
			return err
		}
	}
	if len(spec.SSHKey.Actions) > 0 {
		return check("spec.nodeDisruptionPolicy.sshkey.actions", spec.SSHKey.Actions)
	}
	return nil
}
