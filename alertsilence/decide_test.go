package alertsilence

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	const am = "http://am:9093"
	spec := &v1alpha1.NodeSilences{URL: am, Duration: &metav1.Duration{Duration: time.Hour}}
	capped := *spec
	capped.MaxDuration = &metav1.Duration{Duration: 90 * time.Minute}
	other := *spec
	other.URL = "http://other:9093"
	rec := func(since, until time.Duration) *Record {
		return &Record{ID: "s1", URL: am, Since: now.Add(since), Until: now.Add(until)}
	}
	for _, c := range []struct {
		name      string
		disrupted bool
		spec      *v1alpha1.NodeSilences
		rec       *Record
		want      Action
	}{
		{"idle, no policy", false, nil, nil, Action{}},
		{"idle, policy", false, spec, nil, Action{}},
		{"disrupted, no policy", true, nil, nil, Action{}},
		{"disrupted: create for duration, extend at half", true, spec, nil,
			Action{Op: Create, Until: now.Add(time.Hour), Next: now.Add(30 * time.Minute)}},
		{"default duration", true, &v1alpha1.NodeSilences{URL: am}, nil,
			Action{Op: Create, Until: now.Add(DefaultDuration), Next: now.Add(DefaultDuration / 2)}},
		{"create capped by a maxDuration below the duration", true, &v1alpha1.NodeSilences{URL: am, Duration: spec.Duration, MaxDuration: &metav1.Duration{Duration: 20 * time.Minute}}, nil,
			Action{Op: Create, Until: now.Add(20 * time.Minute)}},
		{"kept, more than half left: wait", true, spec, rec(-10*time.Minute, 50*time.Minute),
			Action{Next: now.Add(20 * time.Minute)}},
		{"kept, half left: extend from now", true, spec, rec(-30*time.Minute, 30*time.Minute),
			Action{Op: Extend, Until: now.Add(time.Hour), Next: now.Add(30 * time.Minute)}},
		{"kept, ended already (controller was down): extend", true, spec, rec(-3*time.Hour, -time.Hour),
			Action{Op: Extend, Until: now.Add(time.Hour), Next: now.Add(30 * time.Minute)}},
		{"extension capped by maxDuration", true, &capped, rec(-40*time.Minute, 20*time.Minute),
			Action{Op: Extend, Until: now.Add(50 * time.Minute), Next: now.Add(20 * time.Minute)}},
		{"maxDuration reached: not extended", true, &capped, rec(-80*time.Minute, 10*time.Minute),
			Action{Why: "maxDuration reached"}},
		{"done: expire", false, spec, rec(-time.Hour, 10*time.Minute),
			Action{Op: Expire, Call: true, Why: "the node is done"}},
		{"done, silence ended by itself: only the record goes", false, spec, rec(-2*time.Hour, -time.Minute),
			Action{Op: Expire, Why: "the node is done"}},
		{"policy no longer asks", true, nil, rec(-time.Minute, time.Hour),
			Action{Op: Expire, Call: true, Why: "no rollout policy of its pool asks for silences"}},
		{"another Alertmanager: expire here first", true, &other, rec(-time.Minute, time.Hour),
			Action{Op: Expire, Call: true, Why: "its rollout policy's silences.url changed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(Input{Now: now, Disrupted: c.disrupted, Spec: c.spec, Record: c.rec})
			if got != c.want {
				t.Errorf("Decide = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestRecord(t *testing.T) {
	r := Record{ID: "8e1c", URL: "http://am:9093", Since: time.Date(2026, 3, 1, 10, 0, 0, 5, time.UTC), Until: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)}
	s := r.String()
	if s != `{"id":"8e1c","url":"http://am:9093","since":"2026-03-01T10:00:00Z","until":"2026-03-01T11:00:00Z"}` {
		t.Errorf("String = %s", s)
	}
	back, err := ParseRecord(s)
	if err != nil || back.ID != r.ID || !back.Since.Equal(r.Since.Truncate(time.Second)) || !back.Until.Equal(r.Until) {
		t.Errorf("ParseRecord(%s) = %+v, %v", s, back, err)
	}
	if r, err := ParseRecord(""); r != nil || err != nil {
		t.Errorf(`ParseRecord("") = %+v, %v`, r, err)
	}
	for _, bad := range []string{"8e1c", `{"id":""}`, `{"id":"x"}`} {
		if _, err := ParseRecord(bad); err == nil {
			t.Errorf("ParseRecord(%s): no error", bad)
		}
	}
}
