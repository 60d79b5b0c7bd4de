package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/planner/sandbox"
)

// contextCancel is a topdown.Cancel that cancels a context.
type contextCancel struct {
	cancel context.CancelFunc
	done   atomic.Bool
}

func (c *contextCancel) Cancel() {
	c.done.Store(true)
	c.cancel()
}

func (c *contextCancel) Cancelled() bool { return c.done.Load() }

// TestOptions configure a Rego test run.
type TestOptions struct {
	// Verbose reports passing tests too.
	Verbose bool
	// Run selects tests by regular expression.
	Run string
	// Timeout bounds each test (default 5s).
	Timeout time.Duration
	// MemoryBytes bounds how far the heap may grow during the run
	// (default DefaultEvalMemoryBytes): past it the test running is
	// stopped, and so is the run. Tests run one at a time, so that the
	// test named is the one that used the memory.
	MemoryBytes int64
}

// TestSummary counts a Rego test run.
type TestSummary struct {
	Passed, Failed, Errored, Skipped int
}

// RunRegoTests runs the Rego tests of a policy set (the policies' own
// regoTests and any extra test modules) in the same sandbox as planning,
// with the library and the declarative entries loaded, and reports like
// `opa test`.
func RunRegoTests(ctx context.Context, pols []policy.Policy, extra []policy.Module, out io.Writer, opts TestOptions) (TestSummary, error) {
	sandbox.Install()
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.MemoryBytes <= 0 {
		opts.MemoryBytes = sandbox.DefaultEvalMemoryBytes
	}
	// The memory watchdog covers the whole run, parsing and compiling
	// included: it cancels the run's context, so the test running fails
	// and the runner stops, and halts the compiler at its next stage.
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	stop := &contextCancel{cancel: cancelRun}
	w := sandbox.WatchMemory(runCtx, opts.MemoryBytes, stop)
	defer w.Stop()
	overBudget := func() error {
		if !w.Tripped() {
			return nil
		}
		return sandbox.NewLimitError(sandbox.ErrEvalMemory, fmt.Sprintf("compiling the Rego tests used more than %s of memory: the sandbox stopped it", sandbox.FormatBytes(opts.MemoryBytes)))
	}
	e := policy.NewSources()
	for i := range pols {
		e.AddPolicy(&pols[i])
	}
	lib, libTests := policy.LibraryModules()
	all := append(append([]policy.Module(nil), lib...), libTests...)
	for i := range all {
		if _, err := e.Parse(nil, &all[i]); err != nil {
			return TestSummary{}, err
		}
	}
	for i := range pols {
		p := &pols[i]
		for _, list := range [][]policy.Module{p.Modules, p.Tests} {
			for j := range list {
				if err := overBudget(); err != nil {
					return TestSummary{}, err
				}
				if _, err := e.Parse(p, &list[j]); err != nil {
					return TestSummary{}, err
				}
			}
		}
	}
	for i := range extra {
		if err := overBudget(); err != nil {
			return TestSummary{}, err
		}
		if _, err := e.Parse(nil, &extra[i]); err != nil {
			return TestSummary{}, err
		}
	}

	store := inmem.NewFromObject(map[string]any{"ndp": map[string]any{"declarative": policy.DeclarativeData(pols)}})
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return TestSummary{}, err
	}
	defer store.Abort(ctx, txn)
	runner := tester.NewRunner().
		SetCompiler(sandbox.Haltable(ast.NewCompiler().WithCapabilities(sandbox.Capabilities).WithEnablePrintStatements(true), stop)).
		SetStore(store).
		SetModules(e.ParsedModules()).
		CapturePrintOutput(true).
		RaiseBuiltinErrors(true).
		SetTimeout(opts.Timeout).
		SetParallel(1).
		Filter(opts.Run)
	ch, err := runner.RunTests(sandbox.WithCallLimit(runCtx, opts.MemoryBytes), txn)
	if err != nil {
		if err := overBudget(); err != nil {
			return TestSummary{}, err
		}
		return TestSummary{}, e.RegoError(err, nil)
	}
	var sum TestSummary
	var stoppedTests []string
	counted := make(chan *tester.Result)
	go func() {
		defer close(counted)
		for r := range ch {
			if r.Error != nil && topdown.IsCancel(r.Error) {
				switch {
				case w.Tripped():
					r.Error = fmt.Errorf("the test used more than %s of memory: the sandbox stopped it, and the tests after it", sandbox.FormatBytes(opts.MemoryBytes))
					stoppedTests = append(stoppedTests, r.Package+"."+r.Name)
				case ctx.Err() == nil:
					r.Error = fmt.Errorf("the test took longer than %s: the sandbox stopped it", opts.Timeout)
				}
			}
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
	if err := (tester.PrettyReporter{Output: out, Verbose: opts.Verbose, FailureLine: true}).Report(counted); err != nil {
		return sum, err
	}
	if len(stoppedTests) > 0 {
		return sum, sandbox.NewLimitError(sandbox.ErrEvalMemory, fmt.Sprintf("Rego test %s used more than %s of memory: the sandbox stopped it and the tests after it", strings.Join(stoppedTests, ", "), sandbox.FormatBytes(opts.MemoryBytes)))
	}
	if sum.Passed+sum.Failed+sum.Errored+sum.Skipped == 0 {
		return sum, fmt.Errorf("no Rego tests found")
	}
	return sum, nil
}
