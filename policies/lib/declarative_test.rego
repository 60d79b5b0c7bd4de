package ndp.builtin.declarative_test

import data.ndp.builtin.declarative

entries := {
	"files": {
		"/etc/chrony.conf": [{"policy": "chrony", "actions": [{"type": "Restart", "restart": {"serviceName": "chronyd.service"}}]}],
		"/etc/foo/": [{"policy": "foo", "actions": [{"type": "None"}]}],
		"/etc/app": [{"policy": "app", "actions": [{"type": "Reload", "reload": {"serviceName": "app.service"}}]}],
	},
	"units": {"foo.service": [{"policy": "foo", "actions": [{"type": "DaemonReload"}]}]},
	"sshkey": [{"policy": "keys", "actions": [{"type": "Drain"}]}],
}

changes := [
	{"id": "file:/etc/chrony.conf", "kind": "file", "path": "/etc/chrony.conf", "dirs": ["/etc/", "/"]},
	{"id": "file:/etc/foo/bar", "kind": "file", "path": "/etc/foo/bar", "dirs": ["/etc/foo/", "/etc/", "/"]},
	{"id": "file:/etc/other", "kind": "file", "path": "/etc/other", "dirs": ["/etc/", "/"]},
	{"id": "file:/etc/app/conf.d/x.conf", "kind": "file", "path": "/etc/app/conf.d/x.conf", "dirs": ["/etc/app/conf.d/", "/etc/app/", "/etc/", "/"]},
	{"id": "file:/etc/app2/x", "kind": "file", "path": "/etc/app2/x", "dirs": ["/etc/app2/", "/etc/", "/"]},
	{"id": "unit:foo.service", "kind": "unit", "name": "foo.service"},
	{"id": "sshkey", "kind": "sshkey"},
]

test_claims_from_entries if {
	claims := declarative.claims with input.changes as changes with data.ndp.declarative as entries
	claims == {
		["chrony", {"change": "file:/etc/chrony.conf", "match": "/etc/chrony.conf", "actions": [{"type": "Restart", "restart": {"serviceName": "chronyd.service"}}]}],
		["foo", {"change": "file:/etc/foo/bar", "match": "/etc/foo/", "actions": [{"type": "None"}]}],
		["app", {"change": "file:/etc/app/conf.d/x.conf", "match": "/etc/app", "actions": [{"type": "Reload", "reload": {"serviceName": "app.service"}}]}],
		["foo", {"change": "unit:foo.service", "match": "foo.service", "actions": [{"type": "DaemonReload"}]}],
		["keys", {"change": "sshkey", "actions": [{"type": "Drain"}]}],
	}
}

test_no_entries_no_claims if {
	claims := declarative.claims with input.changes as changes with data.ndp.declarative as {}
	count(claims) == 0
}
