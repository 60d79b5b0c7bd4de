package rolloutcontrol

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// AlertState is an alert's state as the gate sees it.
type AlertState string

const (
	// AlertFiring: Prometheus' "firing", Alertmanager's "active".
	AlertFiring AlertState = "Firing"
	// AlertPending: Prometheus' "pending" (its for: has not elapsed).
	AlertPending AlertState = "Pending"
	// AlertSuppressed: Alertmanager's "suppressed" (silenced or inhibited).
	AlertSuppressed AlertState = "Suppressed"
)

// Alert is one alert as a gate received it.
type Alert struct {
	Labels map[string]string
	State  AlertState
}

// Name is the alert's alertname label.
func (a Alert) Name() string { return a.Labels["alertname"] }

// labelMatcher is a compiled v1alpha1.LabelMatcher.
type labelMatcher struct {
	label, value string
	op           v1alpha1.MatchOperator
	re           *regexp.Regexp
}

func compileMatchers(ms []v1alpha1.LabelMatcher, field string) ([]labelMatcher, error) {
	out := make([]labelMatcher, 0, len(ms))
	for i, m := range ms {
		c := labelMatcher{label: m.Label, value: m.Value, op: m.Operator}
		if c.label == "" {
			return nil, fmt.Errorf("%s[%d].label: empty", field, i)
		}
		switch c.op {
		case "":
			c.op = v1alpha1.MatchEqual
		case v1alpha1.MatchEqual, v1alpha1.MatchNotEqual:
		case v1alpha1.MatchRegex, v1alpha1.MatchNotRegex:
			// Anchored at both ends, as PromQL's =~ and !~.
			re, err := regexp.Compile("^(?:" + m.Value + ")$")
			if err != nil {
				return nil, fmt.Errorf("%s[%d].value: %w", field, i, err)
			}
			c.re = re
		default:
			return nil, fmt.Errorf("%s[%d].operator: %q is not Equal, NotEqual, Regex or NotRegex", field, i, m.Operator)
		}
		out = append(out, c)
	}
	return out, nil
}

func (m labelMatcher) matches(labels map[string]string) bool {
	v := labels[m.label]
	switch m.op {
	case v1alpha1.MatchNotEqual:
		return v != m.value
	case v1alpha1.MatchRegex:
		return m.re.MatchString(v)
	case v1alpha1.MatchNotRegex:
		return !m.re.MatchString(v)
	}
	return v == m.value
}

// String is the matcher in PromQL's words: namespace=~"web|api".
func (m labelMatcher) String() string {
	op := map[v1alpha1.MatchOperator]string{v1alpha1.MatchEqual: "=", v1alpha1.MatchNotEqual: "!=", v1alpha1.MatchRegex: "=~", v1alpha1.MatchNotRegex: "!~"}[m.op]
	return fmt.Sprintf("%s%s%q", m.label, op, m.value)
}

// AlertMatcher is a compiled v1alpha1.AlertSelector.
type AlertMatcher struct {
	names            map[string]bool
	include, exclude []labelMatcher
	firingOnly       bool
}

// CompileAlertSelector compiles a selector; field names it in errors
// ("spec.gates.prometheus.alerts").
func CompileAlertSelector(s *v1alpha1.AlertSelector, field string) (*AlertMatcher, error) {
	m := &AlertMatcher{firingOnly: s.FiringOnly == nil || *s.FiringOnly}
	if len(s.Names) > 0 {
		m.names = map[string]bool{}
		for i, n := range s.Names {
			if n == "" {
				return nil, fmt.Errorf("%s.names[%d]: empty", field, i)
			}
			m.names[n] = true
		}
	}
	var err error
	if m.include, err = compileMatchers(s.Include, field+".include"); err != nil {
		return nil, err
	}
	if m.exclude, err = compileMatchers(s.Exclude, field+".exclude"); err != nil {
		return nil, err
	}
	return m, nil
}

// Matches says whether the alert holds a start: its name is selected (or
// no names are given), every include matcher matches, no exclude matcher
// does, and it is firing (or firingOnly is false).
func (m *AlertMatcher) Matches(a Alert) bool {
	if m.firingOnly && a.State != AlertFiring {
		return false
	}
	if m.names != nil && !m.names[a.Name()] {
		return false
	}
	for _, im := range m.include {
		if !im.matches(a.Labels) {
			return false
		}
	}
	for _, em := range m.exclude {
		if em.matches(a.Labels) {
			return false
		}
	}
	return true
}

// Select is the alerts that hold a start, in a stable order (name, then
// labels).
func (m *AlertMatcher) Select(alerts []Alert) []Alert {
	var out []Alert
	for _, a := range alerts {
		if m.Matches(a) {
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name() != out[j].Name() {
			return out[i].Name() < out[j].Name()
		}
		return labelString(out[i].Labels, 0) < labelString(out[j].Labels, 0)
	})
	return out
}

// shownLabels are the labels that tell an alert's instances apart, shown
// first in messages.
var shownLabels = []string{"namespace", "pod", "node", "instance", "job", "service", "deployment", "container"}

// labelString shows an alert's labels without its name and severity: the
// labels of shownLabels first, then the others by name; at most max of
// them (0: all).
func labelString(labels map[string]string, max int) string {
	var keys []string
	for _, k := range shownLabels {
		if _, ok := labels[k]; ok {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range labels {
		if k != "alertname" && k != "severity" && !slices.Contains(shownLabels, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	keys = append(keys, rest...)
	if max > 0 && len(keys) > max {
		keys = keys[:max]
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ", ")
}

// alertReasons are the messages for the selected alerts: one per alert
// name, "alert KubePodCrashLooping firing (namespace=web)", with how many
// more of that name hold too.
func alertReasons(policy, source string, selected []Alert) []Reason {
	var out []Reason
	for i := 0; i < len(selected); {
		j := i
		for j < len(selected) && selected[j].Name() == selected[i].Name() {
			j++
		}
		a := selected[i]
		name := a.Name()
		if name == "" {
			name = "(without alertname)"
		}
		d := fmt.Sprintf("alert %s %s", name, strings.ToLower(string(a.State)))
		if l := labelString(a.Labels, 3); l != "" {
			d += " (" + l + ")"
		}
		if more := j - i - 1; more > 0 {
			d += fmt.Sprintf(" and %d more of that name", more)
		}
		if source != "" {
			d += " in " + source
		}
		out = append(out, Reason{Kind: ReasonAlert, Policy: policy, Detail: d})
		i = j
	}
	return out
}
