# A template owner's policy: the haproxy load-balancer template (MachineConfig
# 50-haproxy-template) renders /etc/haproxy/haproxy.cfg and the certificates in
# /etc/haproxy/certs/. HAProxy rereads both on reload, so none of those changes
# needs a reboot or a drain. A new systemd drop-in for haproxy.service needs
# systemd to reread its units and a restart.
package ndp.policy.haproxy

import data.ndp.lib

template := "50-haproxy-template"

from_template(change) if change.source == template

# Files rendered by an older ndp without source tracking are still matched by
# path: the directory belongs to the template.
from_template(change) if not change.source

claims contains {"change": c.id, "match": "/etc/haproxy/", "actions": [lib.reload("haproxy.service")], "reason": "haproxy rereads its configuration on reload"} if {
	some c in lib.file_changes
	"/etc/haproxy/" in c.dirs
	from_template(c)
}

claims contains {"change": c.id, "match": "/etc/systemd/system/haproxy.service.d/", "actions": [lib.daemon_reload, lib.restart("haproxy.service")]} if {
	some c in lib.file_changes
	"/etc/systemd/system/haproxy.service.d/" in c.dirs
	from_template(c)
}
