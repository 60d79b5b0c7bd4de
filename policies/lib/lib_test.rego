package ndp.lib_test

import data.ndp.lib

test_path_keys_most_specific_first if {
	lib.path_keys({"path": "/etc/a/b", "dirs": ["/etc/a/", "/etc/", "/"]}) == ["/etc/a/b", "/etc/a/b/", "/etc/a/", "/etc/a", "/etc/", "/etc", "/"]
}

test_file_claims_directory_with_or_without_slash if {
	changes := [
		{"id": "file:/etc/app/conf.d/x.conf", "kind": "file", "path": "/etc/app/conf.d/x.conf", "dirs": ["/etc/app/conf.d/", "/etc/app/", "/etc/", "/"]},
		{"id": "file:/etc/app2/x", "kind": "file", "path": "/etc/app2/x", "dirs": ["/etc/app2/", "/etc/", "/"]},
	]
	claims := lib.file_claims({"/etc/app": lib.none, "/etc/app/conf.d/": lib.reboot}) with input.changes as changes
	claims == {
		{"change": "file:/etc/app/conf.d/x.conf", "match": "/etc/app", "actions": lib.none},
		{"change": "file:/etc/app/conf.d/x.conf", "match": "/etc/app/conf.d/", "actions": lib.reboot},
	}
}

test_file_claims_exact_and_directory if {
	changes := [
		{"id": "file:/etc/a/b", "kind": "file", "path": "/etc/a/b", "dirs": ["/etc/a/", "/etc/", "/"]},
		{"id": "unit:x.service", "kind": "unit", "name": "x.service"},
	]
	claims := lib.file_claims({"/etc/a/": lib.none, "/etc/a/b": lib.reboot}) with input.changes as changes
	claims == {
		{"change": "file:/etc/a/b", "match": "/etc/a/", "actions": lib.none},
		{"change": "file:/etc/a/b", "match": "/etc/a/b", "actions": lib.reboot},
	}
}

test_file_claims_ignore_other_directories if {
	changes := [{"id": "file:/etc/ab", "kind": "file", "path": "/etc/ab", "dirs": ["/etc/", "/"]}]
	claims := lib.file_claims({"/etc/a/": lib.none}) with input.changes as changes
	count(claims) == 0
}

test_actions if {
	lib.reload("crio.service") == {"type": "Reload", "reload": {"serviceName": "crio.service"}}
	lib.restart("kubelet.service") == {"type": "Restart", "restart": {"serviceName": "kubelet.service"}}
}

kubelet_change := {
	"id": "file:/etc/kubernetes/kubelet.conf", "kind": "file", "op": "changed",
	"path": "/etc/kubernetes/kubelet.conf", "dirs": ["/etc/kubernetes/", "/etc/", "/"], "fields": ["contents"],
	"old": {"format": "yaml", "size": 40, "data": {"maxPods": 250, "systemReserved": {"cpu": "500m"}}},
	"new": {"format": "json", "size": 60, "data": {"maxPods": 300, "systemReserved": {"cpu": "1"}, "podPidsLimit": 4096}},
	"diff": [
		{"path": ["maxPods"], "op": "changed", "old": 250, "new": 300},
		{"path": ["podPidsLimit"], "op": "added", "new": 4096},
		{"path": ["systemReserved", "cpu"], "op": "changed", "old": "500m", "new": "1"},
	],
}

text_change := {
	"id": "file:/etc/chrony.conf", "kind": "file", "op": "changed", "path": "/etc/chrony.conf", "fields": ["contents"],
	"old": {"format": "text", "size": 20, "text": "server a iburst\n"},
	"new": {"format": "text", "size": 40, "text": "server a iburst\nserver b iburst\n"},
	"diff": [{"op": "added", "line": 2, "text": "server b iburst"}],
}

mode_change := {"id": "file:/etc/x", "kind": "file", "op": "changed", "path": "/etc/x", "fields": ["mode"]}

test_changed_keys if {
	lib.changed_keys(kubelet_change) == {"maxPods", "podPidsLimit", "systemReserved"}
	lib.changed_paths(kubelet_change) == {"maxPods", "podPidsLimit", "systemReserved.cpu"}
	lib.key_changed(kubelet_change, "maxPods")
	not lib.key_changed(kubelet_change, "clusterDNS")
}

test_only_keys_changed if {
	lib.only_keys_changed(kubelet_change, {"maxPods", "podPidsLimit", "systemReserved"})
	lib.only_keys_changed(kubelet_change, ["maxPods", "podPidsLimit", "systemReserved"])
	not lib.only_keys_changed(kubelet_change, {"maxPods"})
	not lib.only_keys_changed(object.union(kubelet_change, {"diffTruncated": true}), {"maxPods", "podPidsLimit", "systemReserved"})
}

test_path_changed if {
	lib.path_changed(kubelet_change, ["systemReserved", "cpu"])
	lib.path_changed(kubelet_change, ["systemReserved"])
	not lib.path_changed(kubelet_change, ["systemReserved", "memory"])
}

test_whole_document_replaced if {
	c := object.union(kubelet_change, {"diff": [{"path": [], "op": "changed", "old": {"a": 1}, "new": [1]}]})
	not lib.changed_keys(c)
	not lib.only_keys_changed(c, {"a"})
	lib.changed_paths(c) == {""}
	lib.path_changed(c, ["a"])
}

test_same_data if {
	lib.same_data(object.union(kubelet_change, {"diff": []}))
	lib.only_keys_changed(object.union(kubelet_change, {"diff": []}), set())
	not lib.same_data(kubelet_change)
}

test_text_diff if {
	lib.added_lines(text_change) == ["server b iburst"]
	lib.removed_lines(text_change) == []
	not lib.changed_keys(text_change)
	not lib.only_keys_changed(text_change, {"server"})
	not lib.added_lines(kubelet_change)
}

test_helpers_without_content if {
	not lib.changed_keys(mode_change)
	not lib.changed_paths(mode_change)
	not lib.key_changed(mode_change, "x")
	not lib.only_keys_changed(mode_change, {"x"})
	not lib.path_changed(mode_change, ["x"])
	not lib.same_data(mode_change)
	not lib.added_lines(mode_change)
	not lib.removed_lines(mode_change)
	added := {"id": "file:/etc/y", "kind": "file", "op": "added", "path": "/etc/y", "new": {"format": "json", "size": 2, "data": {}}}
	not lib.only_keys_changed(added, {"x"})
	not lib.changed_keys(added)
}
