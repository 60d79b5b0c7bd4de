// Package changeset is the config diff: it compares two parsed
// MachineConfigs (package machineconfig) into a change set — files, units,
// the core user's SSH keys and password, the OS image, kernel arguments,
// extensions, registries.conf's semantic changes — and lists what a running
// node cannot apply (unreconcilable). paths.go holds the path rule every
// stage shares: a policy path claims itself and everything beneath it.
package changeset
