package changeset

import (
	"fmt"
	"sort"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/machineconfig"
)

var equateEmpty = cmpopts.EquateEmpty()

// unreconcilable lists the changes a running node cannot or must not apply:
// what Ignition only does on first boot (disks, filesystems, RAID,
// directories, links, groups, users other than core, its own
// kernelArguments section, appended files), FIPS mode, the node daemon's
// own control files, and a core user left without any way to log in.
// (LUKS is also applied only on first boot, but the MCO accepts it: it is a
// change, planned None by the defaults.)
func unreconcilable(from, to *machineconfig.Config) []Unreconcilable {
	var out []Unreconcilable
	report := func(field, format string, args ...any) {
		out = append(out, Unreconcilable{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	o, n := &from.Ignition, &to.Ignition
	sections := []struct {
		field    string
		old, new any
	}{
		{"spec.config.passwd.groups", o.Passwd.Groups, n.Passwd.Groups},
		{"spec.config.kernelArguments", o.KernelArguments, n.KernelArguments},
		{"spec.config.storage.disks", o.Storage.Disks, n.Storage.Disks},
		{"spec.config.storage.filesystems", o.Storage.Filesystems, n.Storage.Filesystems},
		{"spec.config.storage.raid", o.Storage.Raid, n.Storage.Raid},
		{"spec.config.storage.directories", o.Storage.Directories, n.Storage.Directories},
	}
	for _, s := range sections {
		if !cmp.Equal(s.old, s.new, equateEmpty) {
			report(s.field, "changes are only applied by Ignition on first boot")
		}
	}

	oldUsers := make(map[string]igntypes.PasswdUser, len(o.Passwd.Users))
	for _, u := range o.Passwd.Users {
		oldUsers[u.Name] = u
	}
	newUsers := make(map[string]bool, len(n.Passwd.Users))
	for _, u := range n.Passwd.Users {
		newUsers[u.Name] = true
		ou, existed := oldUsers[u.Name]
		field := fmt.Sprintf("spec.config.passwd.users[name=%s]", u.Name)
		switch {
		case u.Name == "core":
			// Only the core user's keys and password can change in place.
			ou.SSHAuthorizedKeys, ou.PasswordHash, ou.Name = nil, nil, ""
			u.SSHAuthorizedKeys, u.PasswordHash, u.Name = nil, nil, ""
			if !cmp.Equal(ou, u, equateEmpty) {
				report(field, "only sshAuthorizedKeys and passwordHash of the core user can change")
			}
		case !existed:
			report(field, "users other than core cannot be added")
		case !cmp.Equal(ou, u, equateEmpty):
			report(field, "users other than core cannot change")
		}
	}
	for name := range oldUsers {
		if !newUsers[name] && name != "core" {
			report(fmt.Sprintf("spec.config.passwd.users[name=%s]", name), "users other than core cannot be removed")
		}
	}

	oldLinks := make(map[string]igntypes.Link, len(o.Storage.Links))
	for _, l := range o.Storage.Links {
		oldLinks[l.Path] = l
	}
	for _, l := range n.Storage.Links {
		ol, existed := oldLinks[l.Path]
		switch {
		case !existed:
			report(fmt.Sprintf("spec.config.storage.links[path=%s]", l.Path), "links cannot be added")
		case !cmp.Equal(ol, l, equateEmpty):
			report(fmt.Sprintf("spec.config.storage.links[path=%s]", l.Path), "links cannot be changed")
		}
	}

	oldFiles := fileIndex(o.Storage.Files)
	for i := range n.Storage.Files {
		f := &n.Storage.Files[i]
		if len(f.Append) == 0 {
			continue
		}
		// An append already applied is no change; a new or changed one
		// cannot be replayed safely on a running node.
		if of, existed := oldFiles[f.Path]; existed && cmp.Equal(*of, *f, equateEmpty) {
			continue
		}
		report(fmt.Sprintf("spec.config.storage.files[path=%s].append", f.Path), "appending to files is not supported after first boot")
	}

	// The daemon's journal and state, and the MCO's force file: a config
	// writing them would forge the daemon's state; one dropping them would
	// have the daemon delete its own journal.
	for _, f := range n.Storage.Files {
		if ndpmcv1.DaemonControlPath(f.Path) {
			report(fmt.Sprintf("spec.config.storage.files[path=%s]", f.Path), "is a control file of the node daemon (%s, %s/): no MachineConfig may write it", ndpmcv1.MCOForceFile, ndpmcv1.DaemonStateDir)
		}
	}
	newFiles := fileIndex(n.Storage.Files)
	for _, f := range o.Storage.Files {
		if _, kept := newFiles[f.Path]; !kept && ndpmcv1.DaemonControlPath(f.Path) {
			report(fmt.Sprintf("spec.config.storage.files[path=%s]", f.Path), "is a control file of the node daemon: removing it from the config would delete the daemon's state")
		}
	}

	// As the MCO: removing the core user's last SSH key and its password
	// hash would lock administrators out of the node.
	if hadLogin, hasLogin := coreLogin(from), coreLogin(to); hadLogin && !hasLogin {
		report("spec.config.passwd.users[name=core]", "would be left with no SSH key and no password hash: nobody could log in to the node; keep a key or a password hash")
	}

	if from.Spec.FIPS != to.Spec.FIPS {
		report("spec.fips", "FIPS mode is only set at installation (from %t to %t)", from.Spec.FIPS, to.Spec.FIPS)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// coreLogin: the config gives the core user an SSH key or a password hash.
func coreLogin(cfg *machineconfig.Config) bool {
	u := coreUser(cfg)
	return u != nil && (len(sshKeys(u)) > 0 || deref(u.PasswordHash) != "")
}
