package clusterdiff

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestReportIsDocumented: every field of the report's JSON form is
// described in docs/diff.md, where scripts read what it means.
func TestReportIsDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/diff.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, v := range []any{Report{}, ObjectChange{}, GeneratedChange{}, PoolDiff{}, Group{}, Plan{}, Change{}, MCOEntry{}, Rollout{}} {
		typ := reflect.TypeOf(v)
		title := typ.Name()
		if title == "Report" {
			title = ReportKind // its kind in the JSON
		}
		if !strings.Contains(doc, "**`"+title+"`**") {
			t.Errorf("docs/diff.md does not describe %s", title)
		}
		for i := 0; i < typ.NumField(); i++ {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !strings.Contains(doc, "`"+name+"`") {
				t.Errorf("docs/diff.md does not describe %s's field %q", typ.Name(), name)
			}
		}
	}
}
