package alertsilence

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/prometheus/alertmanager/api/v2/models"
	"github.com/prometheus/alertmanager/pkg/labels"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// DefaultCreatedBy is the silences' createdBy when the policy gives none.
const DefaultCreatedBy = "ndp"

// nodeToken stands in for the placeholder while a matcher is parsed: a
// plain word, so that it is literal in a regular expression too, and the
// node's name goes in after the parse, escaped for the matcher's kind.
const nodeToken = "NDPSILENCENODEPLACEHOLDER"

// Matchers are the administrator's matchers for node: parsed with
// Alertmanager's own parser, {{node}} replaced by the node's name
// (regexp.QuoteMeta'd in =~ and !~ matchers, so that "worker-1.example"
// matches itself only).
func Matchers(specs []v1alpha1.SilenceMatcher, node string) (models.Matchers, error) {
	out := make(models.Matchers, 0, len(specs))
	for i, s := range specs {
		m, err := labels.ParseMatcher(strings.ReplaceAll(string(s), v1alpha1.SilenceNodePlaceholder, nodeToken))
		if err != nil {
			return nil, fmt.Errorf("spec.silences.matchers[%d] %q: %w", i, s, err)
		}
		regex := m.Type == labels.MatchRegexp || m.Type == labels.MatchNotRegexp
		name := node
		if regex {
			name = regexp.QuoteMeta(node)
		}
		value := strings.ReplaceAll(m.Value, nodeToken, name)
		if regex {
			if _, err := regexp.Compile("^(?:" + value + ")$"); err != nil {
				return nil, fmt.Errorf("spec.silences.matchers[%d] %q: %w", i, s, err)
			}
		}
		equal := m.Type == labels.MatchEqual || m.Type == labels.MatchRegexp
		out = append(out, &models.Matcher{Name: &m.Name, Value: &value, IsRegex: &regex, IsEqual: &equal})
	}
	return out, nil
}

// Silence is the silence of node (of pool) from start to end, with id ""
// to create one or the kept id to extend it.
func Silence(s *v1alpha1.NodeSilences, node, pool, id string, start, end time.Time) (*models.PostableSilence, error) {
	ms, err := Matchers(s.Matchers, node)
	if err != nil {
		return nil, err
	}
	comment := fmt.Sprintf("ndp: node %s is being updated (pool %s)", node, pool)
	if s.Comment != "" {
		comment = strings.ReplaceAll(s.Comment, v1alpha1.SilenceNodePlaceholder, node)
	}
	by := s.CreatedBy
	if by == "" {
		by = DefaultCreatedBy
	}
	st, en := strfmt.DateTime(start.UTC()), strfmt.DateTime(end.UTC())
	return &models.PostableSilence{ID: id, Silence: models.Silence{
		Matchers: ms, StartsAt: &st, EndsAt: &en, Comment: &comment, CreatedBy: &by,
	}}, nil
}
