package planner

import (
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/planner/machineconfig"
)

// The planner's inputs are parsed by planner/machineconfig, which the node
// daemon also uses without linking the policy engine.
type (
	// Config is a parsed MachineConfig.
	Config = machineconfig.Config
	// InputError is bad input naming the object, the field and the line.
	InputError = machineconfig.InputError
)

// SourcesAnnotation maps change ids of a rendered config to their sources.
const SourcesAnnotation = ndpmcv1.SourcesAnnotation

// ParseMachineConfig decodes one MachineConfig document (YAML or JSON).
func ParseMachineConfig(origin string, data []byte) (*Config, error) {
	return machineconfig.Parse(origin, data)
}

// NewConfig parses the Ignition config of a MachineConfig spec.
func NewConfig(name string, spec mcfgv1.MachineConfigSpec) (*Config, error) {
	return machineconfig.New(name, spec)
}
