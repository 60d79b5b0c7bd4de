package builder

import (
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
)

// MachineConfigurationBuilder builds the MachineConfiguration named
// cluster (operator.openshift.io/v1), the one whose
// spec.nodeDisruptionPolicy the MCO merges with its defaults.
type MachineConfigurationBuilder struct {
	spec   map[string]any
	policy map[string]any // spec.nodeDisruptionPolicy
}

// MachineConfiguration starts MachineConfiguration cluster with an empty
// spec.
func MachineConfiguration() *MachineConfigurationBuilder {
	return &MachineConfigurationBuilder{spec: map[string]any{}, policy: map[string]any{}}
}

// WithFileActions adds a nodeDisruptionPolicy file entry. An action is
// written as ndp prints it: "Restart chronyd.service", "Reload
// crio.service", "DaemonReload", "Drain", "Reboot", "None".
func (b *MachineConfigurationBuilder) WithFileActions(path string, actions ...string) *MachineConfigurationBuilder {
	return b.withEntry("files", map[string]any{"path": path, "actions": specActions(actions)})
}

// WithUnitActions adds a nodeDisruptionPolicy unit entry (actions as for
// WithFileActions).
func (b *MachineConfigurationBuilder) WithUnitActions(name string, actions ...string) *MachineConfigurationBuilder {
	return b.withEntry("units", map[string]any{"name": name, "actions": specActions(actions)})
}

// WithSSHKeyActions sets the nodeDisruptionPolicy sshkey entry (actions as
// for WithFileActions).
func (b *MachineConfigurationBuilder) WithSSHKeyActions(actions ...string) *MachineConfigurationBuilder {
	b.policy["sshkey"] = map[string]any{"actions": specActions(actions)}
	b.spec["nodeDisruptionPolicy"] = b.policy
	return b
}

// WithSpec sets another spec field by its JSON name
// (irreconcilableValidationOverrides, ...).
func (b *MachineConfigurationBuilder) WithSpec(field string, value any) *MachineConfigurationBuilder {
	b.spec[field] = value
	return b
}

func (b *MachineConfigurationBuilder) withEntry(list string, entry map[string]any) *MachineConfigurationBuilder {
	l, _ := b.policy[list].([]any)
	b.policy[list] = append(l, entry)
	b.spec["nodeDisruptionPolicy"] = b.policy
	return b
}

// specActions are actions as the spec writes them: {type: Restart,
// restart: {serviceName: chronyd.service}} for "Restart chronyd.service".
func specActions(actions []string) []any {
	out := make([]any, 0, len(actions))
	for _, a := range actions {
		typ, service, _ := strings.Cut(a, " ")
		action := map[string]any{"type": typ}
		switch operatorv1.NodeDisruptionPolicySpecActionType(typ) {
		case operatorv1.RestartSpecAction, operatorv1.ReloadSpecAction:
			action[strings.ToLower(typ)] = map[string]any{"serviceName": service}
		}
		out = append(out, action)
	}
	return out
}

// Document is the MachineConfiguration's JSON document (valid YAML):
// apiVersion, kind, metadata (the name cluster) and, unless empty, spec.
func (b *MachineConfigurationBuilder) Document() []byte {
	doc := map[string]any{
		"apiVersion": operatorv1.GroupVersion.String(),
		"kind":       "MachineConfiguration",
		"metadata":   map[string]any{"name": "cluster"},
	}
	if len(b.spec) > 0 {
		doc["spec"] = b.spec
	}
	return mustJSON(doc)
}
