package ndp.policy.haproxy_test

import data.ndp.policy.haproxy

file(path, dirs, source) := {"id": concat(":", ["file", path]), "kind": "file", "op": "changed", "path": path, "dirs": dirs, "source": source}

cfg := file("/etc/haproxy/haproxy.cfg", ["/etc/haproxy/", "/etc/", "/"], "50-haproxy-template")

test_config_change_reloads_haproxy if {
	claims := haproxy.claims with input.changes as [cfg]
	claims == {{
		"change": cfg.id, "match": "/etc/haproxy/",
		"actions": [{"type": "Reload", "reload": {"serviceName": "haproxy.service"}}],
		"reason": "haproxy rereads its configuration on reload",
	}}
}

test_certificate_below_the_directory_reloads_haproxy if {
	cert := file("/etc/haproxy/certs/site.pem", ["/etc/haproxy/certs/", "/etc/haproxy/", "/etc/", "/"], "50-haproxy-template")
	some claim in haproxy.claims with input.changes as [cert]
	claim.actions == [{"type": "Reload", "reload": {"serviceName": "haproxy.service"}}]
}

test_dropin_restarts_after_daemon_reload if {
	dropin := file("/etc/systemd/system/haproxy.service.d/10-limits.conf", ["/etc/systemd/system/haproxy.service.d/", "/etc/systemd/system/", "/etc/systemd/", "/etc/", "/"], "50-haproxy-template")
	some claim in haproxy.claims with input.changes as [dropin]
	claim.actions == [{"type": "DaemonReload"}, {"type": "Restart", "restart": {"serviceName": "haproxy.service"}}]
}

test_files_from_other_machineconfigs_are_not_claimed if {
	other := file("/etc/haproxy/haproxy.cfg", ["/etc/haproxy/", "/etc/", "/"], "99-someone-else")
	claims := haproxy.claims with input.changes as [other]
	count(claims) == 0
}

test_other_paths_are_not_claimed if {
	claims := haproxy.claims with input.changes as [file("/etc/haproxyx", ["/etc/", "/"], "50-haproxy-template")]
	count(claims) == 0
}
