package mcorules

import (
	"fmt"
	"os"
	"reflect"
	"slices"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/machineconfig"
)

// refusals is the MCO's reconcilability check (reconcile.go
// IsRenderedConfigReconcilable, then the daemon's FIPS check), in its
// order: the target must be valid Ignition (checked when it was parsed)
// without special mode bits; a
// passwd change may only touch the core user's SSH keys and password hash;
// Ignition's own kernelArguments, disks, filesystems, raid (each of the
// last three unless overridden) and directories must not change; links may
// only be removed; no file may append or be the daemon's force file; FIPS
// must not change. Each message names the field.
func refusals(from, to *machineconfig.Config, ov operatorv1.IrreconcilableValidationOverrides) []string {
	var out []string
	o, n := &from.Ignition, &to.Ignition

	// The MCO validates the target as Ignition first; machineconfig.Parse
	// and New ran that validation already (Ignition's own, at the config's
	// version, before translating it to 3.5, as the MCO's parse does), so
	// only the MCO's own addition, the mode check, is left here.
	if !reflect.DeepEqual(igntypes.Config{}, *n) {
		for _, f := range n.Storage.Files {
			if f.Mode != nil && os.FileMode(*f.Mode) > os.ModePerm { //nolint:gosec // a mode, as the MCO compares it
				out = append(out, fmt.Sprintf("spec.config.storage.files[path=%s].mode: %#o has setuid, setgid or sticky bits; the MCO accepts modes up to 0777", f.Path, *f.Mode))
			}
		}
	}

	if !reflect.DeepEqual(o.Passwd, n.Passwd) {
		if msg := passwdRefusal(o.Passwd, n.Passwd); msg != "" {
			out = append(out, msg)
		}
	}
	if !reflect.DeepEqual(o.KernelArguments, n.KernelArguments) {
		out = append(out, "spec.config.kernelArguments: changed; the MCO does not apply Ignition's kernel arguments in place (use spec.kernelArguments)")
	}
	storage := ov.Storage
	if !slices.Contains(storage, operatorv1.IrreconcilableValidationOverridesStorageDisks) && !reflect.DeepEqual(o.Storage.Disks, n.Storage.Disks) {
		out = append(out, "spec.config.storage.disks: changed; the MCO cannot repartition a running node (MachineConfiguration spec.irreconcilableValidationOverrides.storage Disks lets it through, unapplied)")
	}
	if !slices.Contains(storage, operatorv1.IrreconcilableValidationOverridesStorageFileSystems) && !reflect.DeepEqual(o.Storage.Filesystems, n.Storage.Filesystems) {
		out = append(out, "spec.config.storage.filesystems: changed; the MCO cannot reformat a running node (MachineConfiguration spec.irreconcilableValidationOverrides.storage FileSystems lets it through, unapplied)")
	}
	if !slices.Contains(storage, operatorv1.IrreconcilableValidationOverridesStorageRaid) && !reflect.DeepEqual(o.Storage.Raid, n.Storage.Raid) {
		out = append(out, "spec.config.storage.raid: changed; the MCO cannot rebuild RAID on a running node (MachineConfiguration spec.irreconcilableValidationOverrides.storage Raid lets it through, unapplied)")
	}
	if !reflect.DeepEqual(o.Storage.Directories, n.Storage.Directories) {
		out = append(out, "spec.config.storage.directories: changed; the MCO creates, changes or removes no directory in place")
	}
	if !reflect.DeepEqual(o.Storage.Links, n.Storage.Links) && len(n.Storage.Links) != 0 {
		out = append(out, "spec.config.storage.links: changed; the MCO only lets links be removed in place")
	}
	for _, f := range n.Storage.Files {
		if len(f.Append) > 0 {
			out = append(out, fmt.Sprintf("spec.config.storage.files[path=%s].append: set; appending is not idempotent, the MCO refuses it in place", f.Path))
		}
		if f.Path == ForceFilePath {
			out = append(out, fmt.Sprintf("spec.config.storage.files[path=%s]: the MCO daemon's force file cannot be written by a MachineConfig", f.Path))
		}
	}
	if from.Spec.FIPS != to.Spec.FIPS {
		out = append(out, fmt.Sprintf("spec.fips: %t → %t; the MCO refuses to change FIPS on a running node", from.Spec.FIPS, to.Spec.FIPS))
	}
	return out
}

// passwdRefusal: groups must not change; when users change, every user of
// the target must be core, and the last one must be core with SSH keys or
// a password hash and nothing else.
func passwdRefusal(o, n igntypes.Passwd) string {
	if !reflect.DeepEqual(o.Groups, n.Groups) {
		return "spec.config.passwd.groups: changed; the MCO changes no group in place"
	}
	if reflect.DeepEqual(o.Users, n.Users) {
		return ""
	}
	for _, u := range n.Users {
		if u.Name != CoreUser {
			return fmt.Sprintf("spec.config.passwd.users[name=%s]: not the core user; the MCO changes only core's SSH keys and password hash in place", u.Name)
		}
	}
	if len(n.Users) == 0 {
		return ""
	}
	last := n.Users[len(n.Users)-1]
	if last.PasswordHash == nil && len(last.SSHAuthorizedKeys) == 0 {
		return "spec.config.passwd.users[name=core]: has neither sshAuthorizedKeys nor passwordHash; the MCO needs one of them to change the core user in place"
	}
	rest := last
	rest.Name, rest.SSHAuthorizedKeys, rest.PasswordHash = "", nil, nil
	if !reflect.DeepEqual(igntypes.PasswdUser{}, rest) {
		return "spec.config.passwd.users[name=core]: sets fields other than sshAuthorizedKeys and passwordHash; the MCO changes only those in place"
	}
	return ""
}

// overridden names the storage changes MachineConfiguration's
// irreconcilableValidationOverrides let through: the MCO accepts them and
// applies them to no node already running (its MachineConfigNode lists
// them in status.irreconcilableChanges).
func overridden(from, to *machineconfig.Config, ov operatorv1.IrreconcilableValidationOverrides) []Rule {
	o, n := &from.Ignition.Storage, &to.Ignition.Storage
	var out []Rule
	add := func(kind operatorv1.IrreconcilableValidationOverridesStorage, section string, changed bool) {
		if changed && slices.Contains(ov.Storage, kind) {
			out = append(out, Rule{
				Change:  "storage." + section,
				Rule:    "irreconcilableValidationOverrides: " + string(kind),
				Actions: []Action{},
				Detail:  "accepted, not applied to nodes already running",
			})
		}
	}
	add(operatorv1.IrreconcilableValidationOverridesStorageDisks, "disks", !reflect.DeepEqual(o.Disks, n.Disks))
	add(operatorv1.IrreconcilableValidationOverridesStorageFileSystems, "filesystems", !reflect.DeepEqual(o.Filesystems, n.Filesystems))
	add(operatorv1.IrreconcilableValidationOverridesStorageRaid, "raid", !reflect.DeepEqual(o.Raid, n.Raid))
	return out
}
