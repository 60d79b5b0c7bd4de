# The default policy: the Machine Config Operator's default behaviour.
# Anything no policy claims needs a reboot; these rules name what does not.
package ndp.policy.defaults

import data.ndp.lib

crio_reload := [lib.reload("crio.service")]

# files: an exact path, or a directory ending in "/" covering what is below.
files := {
	"/etc/mco/internal-registry-pull-secret.json": lib.none,
	"/var/lib/kubelet/config.json": lib.none,
	"/etc/nmstate/openshift/": lib.none,
	"/etc/machine-config-daemon/no-reboot/containers-gpg.pub": crio_reload,
	"/etc/containers/policy.json": crio_reload,
	"/etc/containers/registries.d/": crio_reload,
	"/etc/crio/policies/": crio_reload,
	"/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt": [
		lib.restart("coreos-update-ca-trust.service"),
		lib.restart("crio.service"),
	],
	"/etc/kubernetes/credential-providers/": [lib.restart("kubelet.service")],
	"/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf": [
		lib.daemon_reload,
		lib.restart("kubelet.service"),
	],
	# Beyond the MCO, whose nodes have neither: a node's package sources
	# and pins (Debian, Ubuntu) and Flatcar's update server and channel are
	# the target of a package update; what it then needs, the host says.
	"/etc/apt/sources.list": [lib.package_update],
	"/etc/apt/sources.list.d/": [lib.package_update],
	"/etc/apt/preferences": [lib.package_update],
	"/etc/apt/preferences.d/": [lib.package_update],
	"/etc/flatcar/update.conf": [lib.package_update],
}

claims contains claim if {
	some claim in lib.file_claims(files)
}

# The OS itself: a new image, kernel, kernel arguments or extensions only
# take effect after a reboot.
reboot_fields := {"osImageURL", "baseOSExtensionsContainerImage", "kernelArguments", "extensions", "kernelType"}

claims contains {"change": change.id, "actions": lib.reboot} if {
	some change in input.changes
	change.kind == "os"
	change.name in reboot_fields
}

# The core user's SSH keys and password hash are written in place.
claims contains {"change": change.id, "actions": lib.none} if {
	some change in input.changes
	change.kind in {"sshkey", "password"}
}

# LUKS and its Tang/TPM bindings are set up by Ignition only when a node is
# provisioned: running nodes keep their encryption, new ones get the new
# settings. The MCO accepts such a change without doing anything; so do we,
# and the plan says why.
claims contains {"change": change.id, "actions": lib.none, "reason": "storage.luks only takes effect when a node is provisioned: running nodes keep their disk encryption"} if {
	some change in input.changes
	change.kind == "storage"
	change.name == "luks"
}

# registries.conf: CRI-O picks the new file up on reload. Nodes are drained
# first unless the change is safe for the images already running, that is,
# it only adds ways to pull by digest, or makes existing mirrors digest-only
# (as the MCO's isSafeContainerRegistryConfChanges).
registries_path := "/etc/containers/registries.conf"

claims contains claim if {
	some change in lib.file_changes
	change.path == registries_path
	claim := object.union(
		{"change": change.id, "match": registries_path, "actions": registries_actions},
		registries_reason,
	)
}

diff := object.get(input, "registries", {})

registries_actions := lib.none if {
	not semantic_change
} else := [lib.reload("crio.service")] if {
	count(unsafe_registries_changes) == 0
} else := [lib.reload("crio.service"), lib.drain]

registries_reason := {"reason": "no semantic change"} if {
	not semantic_change
} else := {"reason": "only digest-only mirrors or search registries were added, or mirrors made digest-only"} if {
	count(unsafe_registries_changes) == 0
} else := {"reason": concat("; ", sort(unsafe_registries_changes))}

semantic_change if diff.unknown
semantic_change if diff.searchChanged
semantic_change if count(object.get(diff, "otherChanged", [])) > 0

semantic_change if {
	some field in ["registriesAdded", "registriesRemoved", "registriesChanged", "mirrorsAdded", "mirrorsRemoved", "mirrorsChanged", "mirrorsReordered"]
	count(object.get(diff, field, [])) > 0
}

# unsafe_registries_changes explains each reason to drain.
unsafe_registries_changes contains diff.unknown if diff.unknown

unsafe_registries_changes contains "unqualified-search-registries changed other than by appending" if {
	diff.searchChanged
	not diff.searchAppendedOnly
}

unsafe_registries_changes contains sprintf("registry %s removed", [r.scope]) if {
	some r in diff.registriesRemoved
}

unsafe_registries_changes contains sprintf("registry %s: %s changed", [r.scope, concat(", ", r.fields)]) if {
	some r in diff.registriesChanged
}

unsafe_registries_changes contains sprintf("registry %s added without mirrors", [r.scope]) if {
	some r in diff.registriesAdded
	count(object.get(r, "mirrors", [])) == 0
}

unsafe_registries_changes contains sprintf("registry %s added as blocked", [r.scope]) if {
	some r in diff.registriesAdded
	r.blocked
}

# A new registry whose location differs from its scope redirects every pull
# of that scope, tags included, not only digests.
unsafe_registries_changes contains sprintf("registry %s added with location %s: its pulls are redirected", [r.scope, r.location]) if {
	some r in diff.registriesAdded
	r.location != ""
	r.location != r.scope
}

unsafe_registries_changes contains sprintf("registry %s added as insecure", [r.scope]) if {
	some r in diff.registriesAdded
	r.insecure
}

# A namespace proxy routes every pull of the registry, tags included.
unsafe_registries_changes contains sprintf("registry %s added with namespace-proxy %s: its pulls are proxied", [r.scope, r.namespaceProxy]) if {
	some r in diff.registriesAdded
	object.get(r, "namespaceProxy", "") != ""
}

unsafe_registries_changes contains sprintf("mirror %s of %s added with pull-from-mirror %s", [m.location, r.scope, m.pullFromMirror]) if {
	some r in diff.registriesAdded
	some m in r.mirrors
	m.pullFromMirror != "digest-only"
}

unsafe_registries_changes contains sprintf("mirror %s of %s added with pull-from-mirror %s", [m.location, m.scope, m.pullFromMirror]) if {
	some m in diff.mirrorsAdded
	m.pullFromMirror != "digest-only"
}

unsafe_registries_changes contains sprintf("mirror %s of %s removed", [m.location, m.scope]) if {
	some m in diff.mirrorsRemoved
}

# An existing mirror made digest-only (from all, tag-only or unset) is safe,
# as in the MCO: it no longer serves tag pulls, and what it serves for a
# digest is checked against that digest. Every other change of a mirror is
# not: a move to all or tag-only keeps or puts it on tag pulls, whose
# content nothing checks.
unsafe_registries_changes contains registries_mirror_change_reason(m) if {
	some m in diff.mirrorsChanged
	not mirror_made_digest_only(m)
}

mirror_made_digest_only(m) if {
	m.fields == ["pullFromMirror"]
	m.pullFromMirror == "digest-only"
}

registries_mirror_change_reason(m) := sprintf("mirror %s of %s: pull-from-mirror changed from %s to %s", [m.location, m.scope, object.get(m, ["old", "pullFromMirror"], "?"), m.pullFromMirror]) if {
	m.fields == ["pullFromMirror"]
} else := sprintf("mirror %s of %s: %s changed", [m.location, m.scope, concat(", ", object.get(m, "fields", []))])

unsafe_registries_changes contains sprintf("%s changed", [name]) if {
	some name in diff.otherChanged
}
