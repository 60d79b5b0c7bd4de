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
