package ndp.policy.defaults_test

import data.ndp.policy.defaults

file_change(path, dirs) := {"id": concat(":", ["file", path]), "kind": "file", "op": "changed", "path": path, "dirs": dirs}


reload_crio := [{"type": "Reload", "reload": {"serviceName": "crio.service"}}]

test_pull_secret_needs_nothing if {
	c := file_change("/var/lib/kubelet/config.json", ["/var/lib/kubelet/", "/var/lib/", "/var/", "/"])
	claims := defaults.claims with input.changes as [c]
	claims == {{"change": c.id, "match": c.path, "actions": [{"type": "None"}]}}
}

test_nmstate_directory_needs_nothing if {
	c := file_change("/etc/nmstate/openshift/cluster.yml", ["/etc/nmstate/openshift/", "/etc/nmstate/", "/etc/", "/"])
	claims := defaults.claims with input.changes as [c]
	claims == {{"change": c.id, "match": "/etc/nmstate/openshift/", "actions": [{"type": "None"}]}}
}

test_directory_rule_stops_at_path_boundary if {
	c := file_change("/etc/nmstate/openshift-other", ["/etc/nmstate/", "/etc/", "/"])
	claims := defaults.claims with input.changes as [c]
	count(claims) == 0
}

test_gpg_key_reloads_crio_but_not_its_directory if {
	key := file_change("/etc/machine-config-daemon/no-reboot/containers-gpg.pub", ["/etc/machine-config-daemon/no-reboot/", "/etc/machine-config-daemon/", "/etc/", "/"])
	other := file_change("/etc/machine-config-daemon/no-reboot/other", ["/etc/machine-config-daemon/no-reboot/", "/etc/machine-config-daemon/", "/etc/", "/"])
	claims := defaults.claims with input.changes as [key, other]
	claims == {{"change": key.id, "match": key.path, "actions": reload_crio}}
}

test_crio_reload_paths if {
	changes := [
		file_change("/etc/containers/policy.json", ["/etc/containers/", "/etc/", "/"]),
		file_change("/etc/containers/registries.d/mirror.yaml", ["/etc/containers/registries.d/", "/etc/containers/", "/etc/", "/"]),
		file_change("/etc/crio/policies/ns/policy.json", ["/etc/crio/policies/ns/", "/etc/crio/policies/", "/etc/crio/", "/etc/", "/"]),
	]
	claims := defaults.claims with input.changes as changes
	count(claims) == 3
	every c in claims {
		c.actions == reload_crio
	}
}

test_user_ca_bundle_restarts_update_ca_trust_then_crio if {
	c := file_change("/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt", ["/etc/pki/ca-trust/source/anchors/", "/etc/pki/ca-trust/source/", "/etc/pki/ca-trust/", "/etc/pki/", "/etc/", "/"])
	some claim in defaults.claims with input.changes as [c]
	claim.actions == [
		{"type": "Restart", "restart": {"serviceName": "coreos-update-ca-trust.service"}},
		{"type": "Restart", "restart": {"serviceName": "crio.service"}},
	]
}

test_credential_providers_restart_kubelet if {
	c := file_change("/etc/kubernetes/credential-providers/ecr.yaml", ["/etc/kubernetes/credential-providers/", "/etc/kubernetes/", "/etc/", "/"])
	some claim in defaults.claims with input.changes as [c]
	claim.actions == [{"type": "Restart", "restart": {"serviceName": "kubelet.service"}}]
}

test_kubelet_dropin_daemon_reloads_first if {
	c := file_change("/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf", ["/etc/systemd/system/kubelet.service.d/", "/etc/systemd/system/", "/etc/systemd/", "/etc/", "/"])
	some claim in defaults.claims with input.changes as [c]
	claim.actions == [{"type": "DaemonReload"}, {"type": "Restart", "restart": {"serviceName": "kubelet.service"}}]
}

test_other_files_and_units_unclaimed if {
	changes := [
		file_change("/etc/chrony.conf", ["/etc/", "/"]),
		{"id": "unit:kubelet.service", "kind": "unit", "op": "changed", "name": "kubelet.service"},
	]
	claims := defaults.claims with input.changes as changes
	count(claims) == 0
}

test_os_fields_reboot if {
	changes := [{"id": concat(":", ["os", f]), "kind": "os", "op": "changed", "name": f} |
		some f in ["osImageURL", "kernelArguments", "extensions", "kernelType", "baseOSExtensionsContainerImage"]
	]
	claims := defaults.claims with input.changes as changes
	count(claims) == 5
	every c in claims {
		c.actions == [{"type": "Reboot"}]
	}
}

test_ssh_keys_and_password_need_nothing if {
	changes := [
		{"id": "sshkey", "kind": "sshkey", "op": "changed", "name": "sshkey"},
		{"id": "password", "kind": "password", "op": "changed", "name": "password"},
	]
	claims := defaults.claims with input.changes as changes
	claims == {
		{"change": "sshkey", "actions": [{"type": "None"}]},
		{"change": "password", "actions": [{"type": "None"}]},
	}
}
