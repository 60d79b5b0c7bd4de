package framework

import (
	"strings"
	"testing"
	"time"
)

// TestProgressWait feeds progressWait sequences of observations at fake
// times (seconds after the start) and checks where and how each ends.
func TestProgressWait(t *testing.T) {
	type at struct {
		s int // seconds after the start
		o observation
	}
	sig := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	const stall, ceiling = 60 * time.Second, 20 * time.Minute
	tests := []struct {
		name string
		seq  []at
		// want: the verdict of the last observation (every earlier one
		// must be waitContinue), and what its error must say.
		want     waitVerdict
		wantErr  []string
		wantLast int // index of the observation that ends the wait
	}{{
		name: "done at once",
		seq:  []at{{0, observation{progress: sig("w1 node", "Done"), done: true}}},
		want: waitDone,
	}, {
		name: "slow but progressing: a reboot of 9 minutes, something new every 50 s",
		seq: func() []at {
			var s []at
			for i := 0; i <= 11; i++ {
				s = append(s, at{i * 50, observation{progress: sig("w1 console", strings.Repeat("x", i))}})
			}
			s = append(s, at{11*50 + 10, observation{progress: sig("w1 console", "end"), done: true}})
			return s
		}(),
		want: waitDone,
	}, {
		name: "stalled: nothing new for the bound, names the last progress",
		seq: []at{
			{0, observation{progress: sig("w1 node", "state=Working", "w1 history", "drain Running")}},
			{30, observation{progress: sig("w1 node", "state=Working", "w1 history", "reboot Running")}},
			{60, observation{progress: sig("w1 node", "state=Working", "w1 history", "reboot Running")}},
			{89, observation{progress: sig("w1 node", "state=Working", "w1 history", "reboot Running")}},
			{90, observation{progress: sig("w1 node", "state=Working", "w1 history", "reboot Running")}},
		},
		want:    waitStalled,
		wantErr: []string{"no progress for 1m0s", "1m30s after it started", `w1 history: "drain Running" -> "reboot Running"`, "last progress 1m0s ago"},
	}, {
		name: "a failed read is not progress: the value it hid comes back unchanged",
		seq: []at{
			{0, observation{progress: sig("w1 node", "a")}},
			{20, observation{progress: sig()}},
			{40, observation{progress: sig("w1 node", "a")}},
			{60, observation{progress: sig("w1 node", "a")}},
		},
		want:    waitStalled,
		wantErr: []string{"no progress for 1m0s"},
	}, {
		name: "a new signal is progress (a pod appears)",
		seq: []at{
			{0, observation{progress: sig("w1 node", "a")}},
			{50, observation{progress: sig("w1 node", "a", "w1 pods", "ndp-daemon-x Pending")}},
			{100, observation{progress: sig("w1 node", "a", "w1 pods", "ndp-daemon-x Pending")}},
			{110, observation{progress: sig("w1 node", "a", "w1 pods", "ndp-daemon-x Pending")}},
		},
		want:    waitStalled,
		wantErr: []string{`w1 pods: "ndp-daemon-x Pending"`},
	}, {
		name: "a repeated DrainWaiting (its count going up) is liveness",
		seq: []at{
			{0, observation{progress: sig("w2 events", "3 (DrainWaiting)")}},
			{45, observation{progress: sig("w2 events", "4 (DrainWaiting)")}},
			{90, observation{progress: sig("w2 events", "5 (DrainWaiting)")}},
			{135, observation{progress: sig("w2 events", "6 (DrainWaiting)"), done: true}},
		},
		want: waitDone,
	}, {
		name: "failed: a Degraded node ends the wait at once, with why",
		seq: []at{
			{0, observation{progress: sig("w1 node", "state=Working")}},
			{4, observation{progress: sig("w1 node", "state=Degraded"), failed: "w1 is Degraded: step action: exit 1"}},
		},
		want:    waitFailed,
		wantErr: []string{"failed after 4s", "w1 is Degraded: step action: exit 1", `w1 node: "state=Working" -> "state=Degraded"`},
	}, {
		name: "done wins over a failure seen at the same time (another node's)",
		seq: []at{
			{0, observation{progress: sig("w1 node", "Done"), failed: "w9 is Degraded", done: true}},
		},
		want: waitDone,
	}, {
		name: "ceiling: progressing forever still ends",
		seq: func() []at {
			var s []at
			for i := 0; i <= 40; i++ {
				s = append(s, at{i * 30, observation{progress: sig("w1 console", strings.Repeat("x", i))}})
			}
			return s
		}(),
		want:    waitCeiling,
		wantErr: []string{"not within 20m0s, though still progressing", "last progress 0s ago"},
	}, {
		name: "nothing ever seen: stalled from the start",
		seq: []at{
			{0, observation{}},
			{59, observation{}},
			{60, observation{}},
		},
		want:    waitStalled,
		wantErr: []string{"no progress for 1m0s", "no signal seen"},
	}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProgressWait("the worker nodes on rendered-worker-x", start, stall, ceiling)
			for i, a := range tt.seq {
				v, _, err := p.observe(start.Add(time.Duration(a.s)*time.Second), a.o)
				if i < len(tt.seq)-1 {
					if v != waitContinue {
						t.Fatalf("observation %d (%ds): %s (%v), want continue", i, a.s, v, err)
					}
					continue
				}
				if v != tt.want {
					t.Fatalf("last observation (%ds): %s (%v), want %s", a.s, v, err, tt.want)
				}
				if (err != nil) != (len(tt.wantErr) > 0) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				if err != nil && !strings.Contains(err.Error(), "the worker nodes on rendered-worker-x") {
					t.Errorf("error %q does not name what was waited for", err)
				}
			}
		})
	}
}

// TestProgressWaitChanged: the signals that changed are returned, the
// first sight of each included, so that the poller can print them.
func TestProgressWaitChanged(t *testing.T) {
	start := time.Now()
	p := newProgressWait("x", start, time.Minute, time.Hour)
	_, ch, _ := p.observe(start, observation{progress: map[string]string{"b": "1", "a": "1"}})
	if got := strings.Join(ch, "|"); got != `a: "1"|b: "1"` {
		t.Errorf("first: %s", got)
	}
	_, ch, _ = p.observe(start.Add(time.Second), observation{progress: map[string]string{"a": "1", "b": "2"}})
	if got := strings.Join(ch, "|"); got != `b: "1" -> "2"` {
		t.Errorf("second: %s", got)
	}
	_, ch, _ = p.observe(start.Add(2*time.Second), observation{progress: map[string]string{"a": "1", "b": "2"}})
	if len(ch) != 0 {
		t.Errorf("third: %q, want nothing changed", ch)
	}
}

func TestCeilingFor(t *testing.T) {
	for n, want := range map[int]time.Duration{0: 20 * time.Minute, 1: 20 * time.Minute, 2: 20 * time.Minute, 3: 30 * time.Minute} {
		if got := ceilingFor(n); got != want {
			t.Errorf("ceilingFor(%d) = %s, want %s", n, got, want)
		}
	}
}
