package mcoimport

import "github.com/ndp-dev/ndp/mco/mcorules"

// DefaultRule is a row of the importer's table of ndp's defaults.
type DefaultRule struct {
	Path    string
	Actions []Action
}

// DefaultFiles exposes the table to the tests.
func DefaultFiles() []DefaultRule {
	var out []DefaultRule
	for _, d := range defaultFiles {
		out = append(out, DefaultRule{Path: d.path, Actions: d.actions})
	}
	return out
}

// NDPDefaults, NDPOnlyFiles, MCOOnlyFiles and MCOOnlyUnits expose ndp's
// defaults and their differences from the reference MCO's.
func NDPDefaults() mcorules.Policies { return ndpDefaults() }

func NDPOnlyFiles() []string {
	var out []string
	for _, f := range ndpOnlyFiles() {
		out = append(out, f.Path)
	}
	return out
}

var (
	MCOOnlyFiles = mcoOnlyFiles
	MCOOnlyUnits = mcoOnlyUnits
)
