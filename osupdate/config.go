package osupdate

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// ConfigUpdater applies a rendered config's OS fields (osImageURL, kernel
// arguments, extensions, kernel type) with the host's updater: rpm-ostree
// all four, bootc the image (a bootc host takes its kernel, arguments and
// packages from its image). On an apt or Flatcar host none of them has a
// meaning: a config that changes them is refused before anything is
// written, naming the fields and the host's updater.
type ConfigUpdater struct {
	// Root is the host's root; Named the updater ndp-daemon was told to use
	// (--os-updater), "" to choose per host (Choose).
	Root   string
	Named  Kind
	Runner Runner
}

// Check says whether the host can apply from -> to; nil where nothing OS
// changes. The host's updater is chosen at each call: a MachineConfig may
// write /etc/ndp/os-updater.
func (u ConfigUpdater) Check(from, to Config) error {
	_, err := u.check(from, to)
	return err
}

func (u ConfigUpdater) check(from, to Config) (Detection, error) {
	changed := changedFields(from, to)
	if len(changed) == 0 {
		return Detection{}, nil
	}
	d, err := Choose(u.Root, u.Named)
	if err != nil {
		return d, fmt.Errorf("the config changes %s, but this host has no OS updater: %w", strings.Join(changed, ", "), err)
	}
	switch k := d.Kind; k {
	case KindBootc:
		if other := slices.DeleteFunc(slices.Clone(changed), func(f string) bool { return f == "osImageURL" }); len(other) > 0 {
			return d, fmt.Errorf("the config changes %s: a bootc host (%s) takes them from its image, not from the config; build them into the image and change osImageURL", strings.Join(other, ", "), d.Reason)
		}
		return d, nil
	case KindRpmOstree:
		return d, nil
	default:
		return d, fmt.Errorf("the config changes %s, which the %s updater of this host (%s) cannot apply: only rpm-ostree and bootc hosts take them", strings.Join(changed, ", "), k, d.Reason)
	}
}

// Apply applies from -> to after Check.
func (u ConfigUpdater) Apply(ctx context.Context, from, to Config) (Outcome, error) {
	d, err := u.check(from, to)
	if err != nil || d.Kind == "" {
		return Outcome{}, err
	}
	if d.Kind == KindBootc {
		return Bootc{Runner: u.Runner}.Apply(ctx, to.OSImageURL)
	}
	return RpmOstree{Runner: u.Runner}.Apply(ctx, from, to)
}

// changedFields names the OS fields that differ, in the config's order.
func changedFields(from, to Config) []string {
	var out []string
	if from.OSImageURL != to.OSImageURL {
		out = append(out, "osImageURL")
	}
	if !slices.Equal(from.KernelArguments, to.KernelArguments) {
		out = append(out, "kernelArguments")
	}
	if a, r := setDiff(from.Extensions, to.Extensions); len(a)+len(r) > 0 {
		out = append(out, "extensions")
	}
	if kernelType(from) != kernelType(to) {
		out = append(out, "kernelType")
	}
	return out
}
