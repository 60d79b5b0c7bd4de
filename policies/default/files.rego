# The default policy: the Machine Config Operator's default behaviour.
# Anything no policy claims needs a reboot; these rules name what does not.
package ndp.policy.defaults

import data.ndp.lib

crio_reload := [lib.reload("crio.service")]

# files: an exact path, or a directory ending in "/" covering what is below.
files := {
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
