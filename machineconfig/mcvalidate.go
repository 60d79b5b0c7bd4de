package machineconfig

import (
	"fmt"
	"sort"
	"strings"
)

// The kernel types a MachineConfig may ask for: the MCO's KernelTypeDefault,
// KernelTypeRealtime and KernelType64kPages (pkg/controller/common).
const (
	KernelTypeDefault  = "default"
	KernelTypeRealtime = "realtime"
	KernelType64kPages = "64k-pages"
)

// SupportedExtensions are the RHCOS extensions a MachineConfig may install,
// with the packages each brings: the MCO's SupportedExtensions
// (pkg/controller/common/helpers.go), which has one list, for RHCOS.
var SupportedExtensions = map[string][]string{
	"two-node-ha":          {"pacemaker", "pcs", "fence-agents-all"},
	"wasm":                 {"crun-wasm"},
	"ipsec":                {"NetworkManager-libreswan", "libreswan"},
	"usbguard":             {"usbguard"},
	"kerberos":             {"krb5-workstation", "libkadm5"},
	"kernel-devel":         {"kernel-devel", "kernel-headers"},
	"sandboxed-containers": {"kata-containers"},
	"sysstat":              {"sysstat"},
}

// supportedList is SupportedExtensions' names, sorted, for messages.
func supportedList() string {
	names := make([]string, 0, len(SupportedExtensions))
	for n := range SupportedExtensions {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Validate checks a source MachineConfig (one a pool's rendering merges) as
// the MCO's ValidateMachineConfig does before it renders: the kernel type
// is one the MCO knows, no file mode has the setuid, setgid or sticky bit
// (ValidateIgnition's file-mode check; the rest of ValidateIgnition is
// Ignition's validation, which New has done), and every extension is
// supported (ValidateMachineConfigExtensions). The MCO checks extensions
// only when the MachineConfig has an Ignition config; ndp checks them
// always (see docs/differences-from-the-mco.md).
//
// object names the MachineConfig in the error (`MachineConfig "50-x"`);
// the error is an *InputError naming the field. The render controller and
// the admission webhook both call it, so they refuse with one message.
func Validate(object string, cfg *Config) error {
	if cfg == nil {
		return nil
	}
	spec := cfg.Spec
	switch spec.KernelType {
	case "", KernelTypeDefault, KernelTypeRealtime, KernelType64kPages:
	default:
		return &InputError{Object: object, Field: "spec.kernelType", Err: fmt.Errorf("%q is invalid (valid: %s, %s, %s)", spec.KernelType, KernelTypeDefault, KernelTypeRealtime, KernelType64kPages)}
	}
	for _, f := range cfg.Ignition.Storage.Files {
		if f.Mode == nil || *f.Mode&^0o777 == 0 {
			continue
		}
		mode := *f.Mode
		var bits []string
		for _, b := range []struct {
			bit  int
			name string
		}{{0o4000, "setuid"}, {0o2000, "setgid"}, {0o1000, "sticky"}} {
			if mode&b.bit != 0 {
				bits = append(bits, b.name)
			}
		}
		what := "bits above 0777"
		if len(bits) == 1 {
			what = "the " + bits[0] + " bit"
		} else if len(bits) > 1 {
			what = "the " + strings.Join(bits, " and ") + " bits"
		}
		return &InputError{Object: object, Field: fmt.Sprintf("spec.config.storage.files[path=%s].mode", f.Path),
			Err: fmt.Errorf("%#o has %s: file modes may not exceed 0777", mode, what)}
	}
	first := -1
	var bad []string
	for i, ext := range spec.Extensions {
		if _, ok := SupportedExtensions[ext]; !ok {
			if first < 0 {
				first = i
			}
			bad = append(bad, fmt.Sprintf("%q", ext))
		}
	}
	if first >= 0 {
		noun := "extension"
		if len(bad) > 1 {
			noun = "extensions"
		}
		return &InputError{Object: object, Field: fmt.Sprintf("spec.extensions[%d]", first),
			Err: fmt.Errorf("unsupported %s %s (supported: %s)", noun, strings.Join(bad, ", "), supportedList())}
	}
	return nil
}
