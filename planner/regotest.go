package planner

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestOptions configure a Rego test run.
type TestOptions struct {
	// Verbose reports passing tests too.
	Verbose bool
	// Run selects tests by regular expression.
	Run string
	// Timeout bounds each test (default 5s).
	Timeout time.Duration
}

// TestSummary counts a Rego test run.
type TestSummary struct {
	Passed, Failed, Errored, Skipped int
}

// RunRegoTests runs the Rego tests of a policy set (the policies' own
// regoTests and any extra test modules) in the same sandbox as planning,
// with the library and the declarative entries loaded, and reports like
// `opa test`.
func RunRegoTests(ctx context.Context, pols []Policy, extra []Module, w io.Writer, opts TestOptions) (TestSummary, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	e := newSources()
	for i := range pols {
		e.policies[pols[i].Name] = &pols[i]
	}
	lib, libTests := libraryModules()
	all := append(append([]Module(nil), lib...), libTests...)
	for i := range all {
		if _, err := e.parse(nil, &all[i]); err != nil {
			return TestSummary{}, err
		}
	}
	for i := range pols {
		p := &pols[i]
		for _, list := range [][]Module{p.Modules, p.Tests} {
			for j := range list {
				if _, err := e.parse(p, &list[j]); err != nil {
					return TestSummary{}, err
				}
			}
		}
	}
	for i := range extra {
		if _, err := e.parse(nil, &extra[i]); err != nil {
			return TestSummary{}, err
		}
	}

	store := inmem.NewFromObject(map[string]any{"ndp": map[string]any{"declarative": declarativeData(pols)}})
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return TestSummary{}, err
	}
	defer store.Abort(ctx, txn)
	runner := tester.NewRunner().
		SetCompiler(ast.NewCompiler().WithCapabilities(sandboxCapabilities).WithEnablePrintStatements(true)).
		SetStore(store).
		SetModules(e.parsed).
		CapturePrintOutput(true).
		RaiseBuiltinErrors(true).
		SetTimeout(opts.Timeout).
		Filter(opts.Run)
	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		return TestSummary{}, e.regoError(err, nil)
	}
	var sum TestSummary
	counted := make(chan *tester.Result)
	go func() {
		defer close(counted)
		for r := range ch {
			switch {
			case r.Skip:
				sum.Skipped++
			case r.Error != nil:
				sum.Errored++
			case r.Fail:
				sum.Failed++
			default:
				sum.Passed++
			}
			counted <- r
		}
	}()
	if err := (tester.PrettyReporter{Output: w, Verbose: opts.Verbose, FailureLine: true}).Report(counted); err != nil {
		return sum, err
	}
	if sum.Passed+sum.Failed+sum.Errored+sum.Skipped == 0 {
		return sum, fmt.Errorf("no Rego tests found")
	}
	return sum, nil
}
