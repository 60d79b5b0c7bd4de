package ndp.policy.defaults_test

import data.ndp.policy.defaults

file_change(path, dirs) := {"id": concat(":", ["file", path]), "kind": "file", "op": "changed", "path": path, "dirs": dirs}


reload_crio := [{"type": "Reload", "reload": {"serviceName": "crio.service"}}]

test_pull_secret_needs_nothing if {
	c := file_change("/var/lib/kubelet/config.json", ["/var/lib/kubelet/", "/var/lib/", "/var/", "/"])
	claims := defaults.claims with input.changes as [c]
	claims == {{"change": c.id, "match": c.path, "actions": [{"type": "None"}]}}
}

# The MCO writes the internal registry's pull secret in place, too.
test_internal_registry_pull_secret_needs_nothing if {
	c := file_change("/etc/mco/internal-registry-pull-secret.json", ["/etc/mco/", "/etc/", "/"])
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

test_directory_rule_covers_its_own_path if {
	c := file_change("/etc/nmstate/openshift", ["/etc/nmstate/", "/etc/", "/"])
	claims := defaults.claims with input.changes as [c]
	claims == {{"change": c.id, "match": "/etc/nmstate/openshift/", "actions": [{"type": "None"}]}}
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

test_luks_needs_nothing_and_says_why if {
	c := {"id": "storage:luks", "kind": "storage", "op": "changed", "name": "luks", "added": ["root"]}
	some claim in defaults.claims with input.changes as [c]
	claim.change == c.id
	claim.actions == [{"type": "None"}]
	contains(claim.reason, "provisioned")
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

# registries.conf
registries_change := {
	"id": "file:/etc/containers/registries.conf", "kind": "file", "op": "changed",
	"path": "/etc/containers/registries.conf", "dirs": ["/etc/containers/", "/etc/", "/"],
}

empty_diff := {"searchChanged": false, "searchAppendedOnly": false, "searchReordered": false}

reload := [{"type": "Reload", "reload": {"serviceName": "crio.service"}}]

reload_drain := [{"type": "Reload", "reload": {"serviceName": "crio.service"}}, {"type": "Drain"}]

registries_actions(diff) := claim.actions if {
	some claim in defaults.claims with input.changes as [registries_change] with input.registries as diff
}

digest_mirror(scope) := {"scope": scope, "location": "mirror.example.com/x", "pullFromMirror": "digest-only", "insecure": false}

test_comment_only_change_needs_nothing if {
	registries_actions(empty_diff) == [{"type": "None"}]
}

test_idms_added_reloads_without_drain if {
	diff := object.union(empty_diff, {"registriesAdded": [{
		"scope": "quay.io/ocp", "prefix": "quay.io/ocp", "location": "quay.io/ocp", "blocked": false, "insecure": false,
		"mirrors": [digest_mirror("quay.io/ocp")],
	}]})
	registries_actions(diff) == reload
}

test_digest_mirror_added_to_existing_registry_reloads if {
	registries_actions(object.union(empty_diff, {"mirrorsAdded": [digest_mirror("quay.io/ocp")]})) == reload
}

test_search_list_appended_reloads if {
	diff := object.union(empty_diff, {"searchChanged": true, "searchAppendedOnly": true, "searchAdded": ["quay.io"]})
	registries_actions(diff) == reload
}

test_mirrors_reordered_reloads if {
	registries_actions(object.union(empty_diff, {"mirrorsReordered": ["quay.io/ocp"]})) == reload
}

test_search_list_reordered_drains if {
	diff := object.union(empty_diff, {"searchChanged": true, "searchAppendedOnly": false, "searchReordered": true})
	registries_actions(diff) == reload_drain
}

test_registry_removed_drains if {
	diff := object.union(empty_diff, {"registriesRemoved": [{"scope": "quay.io/ocp", "mirrors": [digest_mirror("quay.io/ocp")]}]})
	registries_actions(diff) == reload_drain
}

test_mirror_removed_drains if {
	registries_actions(object.union(empty_diff, {"mirrorsRemoved": [digest_mirror("quay.io/ocp")]})) == reload_drain
}

test_tag_only_mirror_drains if {
	m := object.union(digest_mirror("quay.io/ocp"), {"pullFromMirror": "tag-only"})
	registries_actions(object.union(empty_diff, {"mirrorsAdded": [m]})) == reload_drain
}

test_itms_registry_drains if {
	m := object.union(digest_mirror("quay.io/ocp"), {"pullFromMirror": "tag-only"})
	diff := object.union(empty_diff, {"registriesAdded": [{"scope": "quay.io/ocp", "blocked": false, "insecure": false, "mirrors": [m]}]})
	registries_actions(diff) == reload_drain
}

test_registry_without_mirrors_drains if {
	diff := object.union(empty_diff, {"registriesAdded": [{"scope": "quay.io/ocp", "blocked": false, "insecure": false}]})
	registries_actions(diff) == reload_drain
}

test_blocked_registry_drains if {
	diff := object.union(empty_diff, {"registriesAdded": [{"scope": "quay.io/ocp", "blocked": true, "insecure": false, "mirrors": [digest_mirror("quay.io/ocp")]}]})
	registries_actions(diff) == reload_drain
}

test_registry_flag_changed_drains if {
	registries_actions(object.union(empty_diff, {"registriesChanged": [{"scope": "quay.io/ocp", "fields": ["blocked"]}]})) == reload_drain
}

test_other_setting_changed_drains if {
	registries_actions(object.union(empty_diff, {"otherChanged": ["short-name-mode"]})) == reload_drain
}

test_unknown_contents_drain if {
	registries_actions({"unknown": "registries.conf comes from a remote source"}) == reload_drain
}

test_unsafe_reason_names_every_cause if {
	diff := object.union(empty_diff, {"mirrorsRemoved": [digest_mirror("quay.io/ocp")], "otherChanged": ["aliases"]})
	some claim in defaults.claims with input.changes as [registries_change] with input.registries as diff
	claim.reason == "aliases changed; mirror mirror.example.com/x of quay.io/ocp removed"
}

test_registry_redirected_to_another_location_drains if {
	diff := object.union(empty_diff, {"registriesAdded": [{
		"scope": "quay.io/openshift", "prefix": "quay.io/openshift", "location": "other.example.com/openshift",
		"blocked": false, "insecure": false, "mirrors": [digest_mirror("quay.io/openshift")],
	}]})
	registries_actions(diff) == reload_drain
}

registries_reason(diff) := claim.reason if {
	some claim in defaults.claims with input.changes as [registries_change] with input.registries as diff
}

# mirror_changed is an existing mirror of quay.io/ocp whose pull-from-mirror
# went from old to new (effective values: "all" when unset).
mirror_changed(old, new) := {
	"scope": "quay.io/ocp", "location": "mirror.example.com/x", "pullFromMirror": new, "insecure": false,
	"fields": ["pullFromMirror"], "old": {"location": "mirror.example.com/x", "pullFromMirror": old, "insecure": false},
}

# As the MCO's isSafeContainerRegistryConfChanges: an existing mirror made
# digest-only is safe, a change away from digest-only is not.
test_mirror_made_digest_only_reloads if {
	every old in ["all", "tag-only"] {
		diff := object.union(empty_diff, {"mirrorsChanged": [mirror_changed(old, "digest-only")]})
		registries_actions(diff) == reload
		registries_reason(diff) == "only digest-only mirrors or search registries were added, or mirrors made digest-only"
	}
}

test_mirror_no_longer_digest_only_drains if {
	every new in ["all", "tag-only"] {
		diff := object.union(empty_diff, {"mirrorsChanged": [mirror_changed("digest-only", new)]})
		registries_actions(diff) == reload_drain
		registries_reason(diff) == sprintf("mirror mirror.example.com/x of quay.io/ocp: pull-from-mirror changed from digest-only to %s", [new])
	}
}

test_mirror_changed_between_all_and_tag_only_drains if {
	registries_actions(object.union(empty_diff, {"mirrorsChanged": [mirror_changed("all", "tag-only")]})) == reload_drain
	registries_actions(object.union(empty_diff, {"mirrorsChanged": [mirror_changed("tag-only", "all")]})) == reload_drain
}

test_mirror_made_digest_only_and_insecure_drains if {
	m := object.union(mirror_changed("all", "digest-only"), {"insecure": true, "fields": ["insecure", "pullFromMirror"]})
	diff := object.union(empty_diff, {"mirrorsChanged": [m]})
	registries_actions(diff) == reload_drain
	registries_reason(diff) == "mirror mirror.example.com/x of quay.io/ocp: insecure, pullFromMirror changed"
}

test_mirror_namespace_proxy_changed_drains if {
	m := object.union(mirror_changed("digest-only", "digest-only"), {"namespaceProxy": "quay.io", "fields": ["namespaceProxy"]})
	registries_actions(object.union(empty_diff, {"mirrorsChanged": [m]})) == reload_drain
}

# A changed mirror that does not say what changed is not taken as safe.
test_mirror_change_without_fields_drains if {
	registries_actions(object.union(empty_diff, {"mirrorsChanged": [{"scope": "quay.io/ocp", "location": "mirror.example.com/x", "pullFromMirror": "digest-only"}]})) == reload_drain
}

test_registry_added_behind_a_namespace_proxy_drains if {
	diff := object.union(empty_diff, {"registriesAdded": [{
		"scope": "quay.io/ocp", "prefix": "quay.io/ocp", "location": "quay.io/ocp", "namespaceProxy": "quay.io",
		"blocked": false, "insecure": false, "mirrors": [digest_mirror("quay.io/ocp")],
	}]})
	registries_actions(diff) == reload_drain
	registries_reason(diff) == "registry quay.io/ocp added with namespace-proxy quay.io: its pulls are proxied"
}

# A snapshot source or a pin changed: the packages are updated, and the
# host says what that needs.
test_apt_sources_update_packages if {
	c := file_change("/etc/apt/sources.list.d/snapshot.list", ["/etc/apt/sources.list.d/", "/etc/apt/", "/etc/", "/"])
	claims := defaults.claims with input.changes as [c]
	claims == {{"change": c.id, "match": "/etc/apt/sources.list.d/", "actions": [{"type": "PackageUpdate"}]}}
}

test_apt_configuration_is_not_a_source if {
	c := file_change("/etc/apt/apt.conf.d/50unattended-upgrades", ["/etc/apt/apt.conf.d/", "/etc/apt/", "/etc/", "/"])
	claims := defaults.claims with input.changes as [c]
	count(claims) == 0
}
