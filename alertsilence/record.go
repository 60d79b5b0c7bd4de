package alertsilence

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// Record is what v1alpha1.SilenceAnnotation holds: the silence kept for
// the node's current update, and where. The Alertmanager's URL is kept so
// that the silence is expired where it was made, whatever the policy says
// by then; the times so that extending needs no call.
type Record struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	// Since is when the update's first silence started (maxDuration counts
	// from it); Until is when the current one ends.
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
}

// ParseRecord reads the annotation; "" is no record.
func ParseRecord(s string) (*Record, error) {
	if s == "" {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil || r.ID == "" || r.URL == "" {
		return nil, fmt.Errorf("%s %q: not a silence record", v1alpha1.SilenceAnnotation, s)
	}
	return &r, nil
}

// String is the annotation's value.
func (r Record) String() string {
	r.Since, r.Until = r.Since.UTC().Truncate(time.Second), r.Until.UTC().Truncate(time.Second)
	b, _ := json.Marshal(r)
	return string(b)
}
