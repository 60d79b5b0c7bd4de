package ndp.policy.defaults_test

import data.ndp.policy.defaults

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
