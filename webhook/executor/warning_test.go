package executor

import (
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

func TestWarning(t *testing.T) {
	restart := &planner.Plan{Actions: []policy.Action{policy.RestartAction("chronyd.service")},
		Reasons: []planner.Reason{{Change: "file /etc/chrony.conf: changed", Policy: "chrony"}}}
	reboot := &planner.Plan{Actions: []policy.Action{{Type: policy.ActionReboot}}, Drain: true, Reboot: true,
		Reasons: []planner.Reason{{Change: "file /etc/a: added", Policy: planner.NoPolicy}, {Change: "unit b.service: changed", Policy: "default"}}}
	none := &planner.Plan{Actions: []policy.Action{{Type: policy.ActionNone}}, Reasons: []planner.Reason{{Change: "file /var/lib/kubelet/config.json: changed", Policy: "default"}}}
	explained := &planner.Plan{Actions: []policy.Action{{Type: policy.ActionDaemonReload}, policy.RestartAction("kubelet.service")},
		Reasons: []planner.Reason{
			{Change: "file /etc/kubernetes/kubelet.conf: contents changed", Policy: "kubelet-live", Detail: "maxPods changed"},
			{Change: "file /etc/systemd/system/kubelet.service.d/20-logging.conf: added", Policy: "kubelet-live", Detail: "the kubelet's log level changed"},
			{Change: "file /etc/kubernetes/kubelet.conf.d/x: added", Policy: "kubelet-live", Detail: "maxPods changed"},
			{Change: "ssh keys: 1 added, 0 removed", Policy: "default"},
		}}
	for _, tc := range []struct {
		name string
		pp   PoolPreview
		want string
	}{
		{"one plan", PoolPreview{Pool: "worker", Nodes: 12, Groups: []Group{{From: "r1", Nodes: 12, Plan: restart}}},
			"pool worker, 12 nodes: Restart chronyd.service, no drain, no reboot (policy chrony)"},
		{"no action", PoolPreview{Pool: "worker", Nodes: 1, Groups: []Group{{From: "r1", Nodes: 1, Plan: none}}},
			"pool worker, 1 node: no action, no drain, no reboot (policy default)"},
		{"unclaimed change and two configs", PoolPreview{Pool: "infra", Nodes: 4, Groups: []Group{{From: "r1", Nodes: 3, Plan: reboot}, {From: "r0", Nodes: 1, Plan: restart}}},
			"pool infra, 4 nodes: 3 nodes from r1: Reboot, drains 3 nodes, reboots 3 nodes (policy default; unclaimed: file /etc/a: added); 1 node from r0: Restart chronyd.service, no drain, no reboot (policy chrony)"},
		{"up to date and unconfigured nodes", PoolPreview{Pool: "worker", Nodes: 5, Rendered: "r2", UpToDate: 2, Unconfigured: 1, Groups: []Group{{From: "r1", Nodes: 2, Plan: restart}}},
			"pool worker, 5 nodes: 2 nodes from r1: Restart chronyd.service, no drain, no reboot (policy chrony); 2 nodes already on r2; 1 node with no current config, not planned"},
		{"unchanged", PoolPreview{Pool: "worker", Nodes: 3, Rendered: "r1", Unchanged: true, UpToDate: 3},
			"pool worker, 3 nodes: no change to the rendered config, no node is updated"},
		{"unchanged, updates under way", PoolPreview{Pool: "worker", Nodes: 3, Rendered: "r1", Unchanged: true, UpToDate: 1, Pending: 2},
			"pool worker, 3 nodes: no change to the rendered config; 2 nodes still moving to it as already planned"},
		{"the policies' reasons", PoolPreview{Pool: "worker", Nodes: 3, Groups: []Group{{From: "r1", Nodes: 3, Plan: explained}}},
			"pool worker, 3 nodes: DaemonReload, Restart kubelet.service, no drain, no reboot (policies kubelet-live: maxPods changed; the kubelet's log level changed; default)"},
		{"no nodes", PoolPreview{Pool: "edge", Rendered: "r9"},
			"pool edge, 0 nodes: new rendered config r9, no node to update"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pp.Warning(); got != tc.want {
				t.Errorf("\ngot  %s\nwant %s", got, tc.want)
			}
		})
	}

	var many []planner.Reason
	for i := range 500 {
		many = append(many, planner.Reason{Change: "file /etc/x", Policy: strings.Repeat("p", 20) + string(rune('a'+i%26)) + strings.Repeat("q", i%7)})
	}
	long := PoolPreview{Pool: "w", Nodes: 1, Groups: []Group{{From: "r", Nodes: 1, Plan: &planner.Plan{Actions: restart.Actions, Reasons: many}}}}
	if got := long.Warning(); len(got) > maxWarning || !strings.HasSuffix(got, "...") {
		t.Errorf("a long warning is %d bytes: %q", len(got), got[len(got)-20:])
	}
}
