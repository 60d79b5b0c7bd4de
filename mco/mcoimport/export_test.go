package mcoimport

// DefaultRule is a row of the defaults table, for the tests.
type DefaultRule struct {
	Path    string
	Actions []Action
}

// DefaultFiles exposes the defaults table to the tests.
func DefaultFiles() []DefaultRule {
	var out []DefaultRule
	for _, d := range defaultFiles {
		out = append(out, DefaultRule{Path: d.path, Actions: d.actions})
	}
	return out
}
