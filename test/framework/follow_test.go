package framework

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/client-go/util/jsonpath"
)

// TestRowTemplates runs observeNodes' jsonpath templates as kubectl does
// (client-go's jsonpath, missing keys allowed) on objects as the API
// server returns them, and checks the rows have the fields observeNodes
// reads, in order.
func TestRowTemplates(t *testing.T) {
	tests := []struct {
		name, template, list string
		want                 []string
	}{{
		name:     "nodes",
		template: jsonNodeRows,
		list: `{"items":[{"metadata":{"name":"worker-1","annotations":{"machineconfiguration.openshift.io/currentConfig":"r1","machineconfiguration.openshift.io/desiredConfig":"r2","machineconfiguration.openshift.io/state":"Degraded","machineconfiguration.openshift.io/reason":"step action: exit 1"}},
			"spec":{"unschedulable":true},"status":{"conditions":[{"type":"MemoryPressure","status":"False"},{"type":"Ready","status":"Unknown"}],"nodeInfo":{"bootID":"0123456789abcdef"}}},
			{"metadata":{"name":"worker-2"},"spec":{},"status":{}}]}`,
		want: []string{"worker-1\tr1\tr2\tDegraded\ttrue\tUnknown\t0123456789abcdef\tstep action: exit 1", "worker-2\t\t\t\t\t\t\t"},
	}, {
		name:     "pods",
		template: jsonPodRows,
		list: `{"items":[{"metadata":{"namespace":"ndp-system","name":"ndp-daemon-x"},"spec":{"nodeName":"worker-1"},"status":{"phase":"Running","containerStatuses":[{"ready":true,"restartCount":2}]}},
			{"metadata":{"namespace":"default","name":"web-y"},"spec":{},"status":{"phase":"Pending"}}]}`,
		want: []string{"worker-1\tndp-system/ndp-daemon-x Running ready=true restarts=2", "\tdefault/web-y Pending ready= restarts="},
	}, {
		name:     "events",
		template: jsonEventRows,
		list: `{"items":[{"metadata":{"name":"worker-1.abc"},"involvedObject":{"kind":"Node","name":"worker-1"},"count":3,"reason":"DrainWaiting"},
			{"metadata":{"name":"worker-1.def"},"involvedObject":{"kind":"Node","name":"worker-1"},"series":{"count":4},"reason":"DrainWaiting"}]}`,
		want: []string{"worker-1\tworker-1.abc\t3\t\tDrainWaiting", "worker-1\tworker-1.def\t\t4\tDrainWaiting"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := jsonpath.New(tt.name).AllowMissingKeys(true)
			if err := j.Parse(tt.template); err != nil {
				t.Fatal(err)
			}
			var obj any
			if err := json.Unmarshal([]byte(tt.list), &obj); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := j.Execute(&out, obj); err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("rows:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

// TestJudgeNodes: what judgeNodes makes of what was read.
func TestJudgeNodes(t *testing.T) {
	node := func(name, current, state, reason string) string {
		return name + "\t" + current + "\trendered-2\t" + state + "\ttrue\tTrue\tb00t1d\t" + reason + "\n"
	}
	history := func(to, result string, steps ...string) string {
		var ss []string
		for i := 0; i+1 < len(steps); i += 2 {
			ss = append(ss, `{"name":"`+steps[i]+`","result":"`+steps[i+1]+`","detail":"exit status 1"}`)
		}
		return `{"items":[{"metadata":{"name":"worker-1"},"status":{"updates":[{"from":"rendered-1","to":"` + to +
			`","executor":"ndp-daemon","started":"2026-01-01T00:00:00Z","result":"` + result + `","message":"it broke","steps":[` + strings.Join(ss, ",") + `]}]}}]}`
	}
	both := []string{"worker-1", "worker-2"}
	tests := []struct {
		name        string
		names       []string
		target      string
		r           nodeReads
		wantDone    []string
		wantAllDone bool
		wantFailed  string
		wantSignals map[string]string // a subset of the progress
	}{{
		name: "one done, one working: not done; the other nodes ignored", names: both, target: "rendered-2",
		r:        nodeReads{nodesOK: true, nodes: node("worker-1", "rendered-2", "Done", "") + node("worker-2", "rendered-1", "Working", "") + node("control", "x", "Degraded", "")},
		wantDone: []string{"worker-1"},
		wantSignals: map[string]string{
			"worker-2 node": "current=rendered-1 desired=rendered-2 state=Working cordoned=true ready=True boot=b00t1d",
		},
	}, {
		name: "all done", names: both, target: "rendered-2",
		r:        nodeReads{nodesOK: true, nodes: node("worker-1", "rendered-2", "Done", "") + node("worker-2", "rendered-2", "Done", "")},
		wantDone: both, wantAllDone: true,
	}, {
		name: "no target: never done", names: []string{"worker-1"},
		r: nodeReads{nodesOK: true, nodes: node("worker-1", "rendered-2", "Done", "")},
	}, {
		name: "Degraded, with the daemon's reason", names: both, target: "rendered-2",
		r:          nodeReads{nodesOK: true, nodes: node("worker-2", "rendered-1", "Degraded", "step action: restart chronyd.service: exit 1")},
		wantFailed: "worker-2 is Degraded: step action: restart chronyd.service: exit 1",
	}, {
		name: "Degraded for a reboot timeout: waited for", names: both, target: "rendered-2",
		r: nodeReads{nodesOK: true, nodes: node("worker-2", "rendered-1", "Degraded", "RebootTimeout: not Ready for 30s of its update, since 2026-11-30 01:54:16 UTC (rolloutpolicy p's failures.rebootTimeout)")},
	}, {
		name: "a failed step of the update to the target", names: both, target: "rendered-2",
		r:           nodeReads{historiesOK: true, histories: history("rendered-2", "InProgress", "cordon", "Done", "drain", "Failed")},
		wantFailed:  "worker-1: the update to rendered-2 failed at step drain: exit status 1",
		wantSignals: map[string]string{"worker-1 history": "to rendered-2 InProgress: cordon Done, drain Failed"},
	}, {
		name: "the update failed", names: both, target: "rendered-2",
		r:          nodeReads{historiesOK: true, histories: history("rendered-2", "Failed", "cordon", "Done")},
		wantFailed: "worker-1: the update to rendered-2 failed: it broke",
	}, {
		name: "a failure of an earlier update (another target) is not this one's", names: both, target: "rendered-3",
		r:           nodeReads{historiesOK: true, histories: history("rendered-2", "Failed", "drain", "Failed")},
		wantSignals: map[string]string{"worker-1 history": "to rendered-2 Failed: drain Failed"},
	}, {
		name: "pods, events (a repeated one counting up), consoles", names: both, target: "rendered-2",
		r: nodeReads{
			podsOK: true, pods: "worker-1\tndp-system/d-1 Running ready=true restarts=0\nworker-1\tdefault/web-a Running ready=true restarts=0\n\tdefault/web-b Pending ready= restarts=\n",
			eventsOK: true, events: "worker-1\tw1.a\t1\t\tCordoned\nworker-1\tw1.b\t\t7\tDrainWaiting\nworker-3\tw3.a\t1\t\tStarting\n",
			consoles: map[string]int64{"worker-2": 4096, "worker-3": 1},
			units:    map[string]string{"worker-2": "Id=kubelet.service ActiveState=active CPUUsageNSec=123", "worker-3": "x"},
		},
		wantSignals: map[string]string{
			"worker-1 pods":    "default/web-a Running ready=true restarts=0, ndp-system/d-1 Running ready=true restarts=0",
			"worker-2 pods":    "",
			"ndp pods":         "ndp-system/d-1 Running ready=true restarts=0",
			"worker-1 events":  "8 (Cordoned DrainWaiting)",
			"worker-2 events":  "0 ()",
			"worker-2 console": "4096 bytes",
			"worker-2 units":   "Id=kubelet.service ActiveState=active CPUUsageNSec=123",
		},
	}, {
		name: "failed reads: their signals unknown, not empty", names: both, target: "rendered-2",
		r: nodeReads{nodes: "junk", pods: "worker-1\tx\n", events: "worker-1\te\t1\t\tX\n"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judgeNodes(tt.names, tt.target, tt.r)
			if strings.Join(v.done, ",") != strings.Join(tt.wantDone, ",") || v.observation.done != tt.wantAllDone {
				t.Errorf("done %q (all: %t), want %q (all: %t)", v.done, v.observation.done, tt.wantDone, tt.wantAllDone)
			}
			if v.failed != tt.wantFailed {
				t.Errorf("failed %q, want %q", v.failed, tt.wantFailed)
			}
			for k, want := range tt.wantSignals {
				if got, ok := v.progress[k]; !ok || got != want {
					t.Errorf("signal %q = %q (present: %t), want %q", k, got, ok, want)
				}
			}
			for k := range v.progress {
				if strings.HasPrefix(k, "worker-3") || strings.HasPrefix(k, "control") {
					t.Errorf("signal %q of a node not waited on", k)
				}
			}
			if !tt.r.nodesOK && !tt.r.historiesOK && !tt.r.podsOK && !tt.r.eventsOK && len(tt.r.consoles) == 0 && len(tt.r.units) == 0 && len(v.progress) != 0 {
				t.Errorf("signals %q from failed reads", v.progress)
			}
		})
	}
}
