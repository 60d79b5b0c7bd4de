package sandbox

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// DefaultEvalMemoryBytes is how far the Go heap may grow while one
// evaluation of the policies runs (Options.EvalMemoryBytes), and the
// whole of a Rego test run (TestOptions.MemoryBytes).
const DefaultEvalMemoryBytes = 256 << 20

// One builtin call allocates its result in one go, with no point where OPA
// can stop it: a call may allocate at most this fraction of the evaluation's
// budget (64 MiB by default), checked before the call (see guards.go).
const callBudgetDivisor = 4

// watchInterval is how often the watchdog samples the heap. Rego allocates
// at most a few hundred MB/s on one core, so a sample every 2 ms overshoots
// the budget by a few MB at most.
const watchInterval = 2 * time.Millisecond

// Runtime metrics the watchdog reads: none stops the world.
const (
	heapObjectsMetric = "/memory/classes/heap/objects:bytes" // live and not yet swept
	heapLiveMetric    = "/gc/heap/live:bytes"                // live at the last GC
	gcCyclesMetric    = "/gc/cycles/total:gc-cycles"
)

func readMetrics(names ...string) []uint64 {
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	out := make([]uint64, len(names))
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			out[i] = s[i].Value.Uint64()
		}
	}
	return out
}

// HeapBytes is the Go heap as the watchdog sees it: the bytes of heap
// objects, live or not yet swept. Tests sample it to report peaks.
func HeapBytes() uint64 { return readMetrics(heapObjectsMetric)[0] }

// MemoryWatch is the watchdog of one evaluation: it samples the heap every
// few milliseconds and cancels the evaluation once the heap has grown more
// than the budget since the evaluation started. It also cancels it when ctx
// ends (the deadline), in place of OPA's own context watcher.
//
// The heap is the process's, so what other goroutines allocate meanwhile
// counts too, and garbage counts until the collector sweeps it. So a
// crossing alone is not proof: the watchdog stops the evaluation when
//   - a collection that ran during the evaluation found the live heap grown
//     by a quarter of the budget or more (no ndp evaluation holds that much:
//     it is the evaluation's own data, not garbage), or else
//   - a collection it forces finds the heap still over the budget, or
//   - the heap grows past twice the budget, garbage or not.
//
// After stopping an evaluation it collects its garbage, so that the next
// evaluation starts from the live heap.
type MemoryWatch struct {
	budget  uint64
	base    uint64 // heap objects at the start
	live0   uint64 // live heap at the last collection before the start
	cycles0 uint64
	cancel  topdown.Cancel
	peak    atomic.Uint64
	tripped atomic.Bool
	stopped chan struct{}
	exited  chan struct{}
}

// WatchMemory starts a watchdog that calls c.Cancel when the evaluation
// must stop. budget <= 0 only watches ctx.
func WatchMemory(ctx context.Context, budget int64, c topdown.Cancel) *MemoryWatch {
	m := readMetrics(heapObjectsMetric, heapLiveMetric, gcCyclesMetric)
	w := &MemoryWatch{base: m[0], live0: m[1], cycles0: m[2], cancel: c, stopped: make(chan struct{}), exited: make(chan struct{})}
	if budget > 0 {
		w.budget = uint64(budget)
	}
	w.peak.Store(w.base)
	go w.run(ctx)
	return w
}

func (w *MemoryWatch) run(ctx context.Context) {
	defer close(w.exited)
	var tick <-chan time.Time
	if w.budget > 0 {
		t := time.NewTicker(watchInterval)
		defer t.Stop()
		tick = t.C
	}
	sample := []metrics.Sample{{Name: heapObjectsMetric}}
	// Garbage left when the evaluation starts is no room for it: growth is
	// counted from the live heap, when that is known. A crossing caused by
	// garbage is then told apart by a collection.
	from := w.base
	if w.live0 > 0 && w.live0 < from {
		from = w.live0
	}
	limit := from + w.budget
	hard := w.base + 2*w.budget
	confirmAt := limit    // the next crossing that needs a look
	var confirm chan bool // result of a forced collection
	for {
		select {
		case <-w.stopped:
			return
		case <-ctx.Done():
			w.cancel.Cancel()
			return
		case over := <-confirm:
			confirm = nil
			if over {
				w.trip()
				return
			}
			// Garbage made the crossing: look again after another budget.
			confirmAt = min(hard, HeapBytes()+w.budget)
		case <-tick:
			metrics.Read(sample)
			cur := sample[0].Value.Uint64()
			if cur > w.peak.Load() {
				w.peak.Store(cur)
			}
			switch {
			case cur > hard:
				w.trip()
				return
			case cur <= confirmAt || confirm != nil:
			case w.liveGrown():
				w.trip()
				return
			default:
				confirm = make(chan bool, 1)
				go func(ch chan<- bool) {
					runtime.GC()
					ch <- HeapBytes() > limit
				}(confirm)
			}
		}
	}
}

// liveGrown tells whether a collection during the evaluation found the
// live heap a quarter of the budget above where it was before.
func (w *MemoryWatch) liveGrown() bool {
	m := readMetrics(heapLiveMetric, gcCyclesMetric)
	return m[1] > w.cycles0 && m[0] > w.live0+w.budget/4
}

func (w *MemoryWatch) trip() {
	w.tripped.Store(true)
	w.cancel.Cancel()
}

// Stop ends the watch and says whether it stopped the evaluation, and the
// highest heap it sampled. The evaluation must have returned: the garbage
// of a stopped one is collected.
func (w *MemoryWatch) Stop() (tripped bool, peak uint64) {
	close(w.stopped)
	<-w.exited
	if w.tripped.Load() {
		runtime.GC()
	}
	return w.tripped.Load(), w.peak.Load()
}

// Tripped says whether the watchdog stopped the evaluation.
func (w *MemoryWatch) Tripped() bool { return w.tripped.Load() }

// FormatBytes writes a byte count as people read limits: 256 MiB, 1.5 GiB.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	suffix := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}[exp]
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), suffix)
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}

// callLimitKey carries the per-call allocation limit of the evaluation to
// the guarded builtins, through the context OPA hands them.
type callLimitKey struct{}

func WithCallLimit(ctx context.Context, evalBudget int64) context.Context {
	return context.WithValue(ctx, callLimitKey{}, evalBudget/callBudgetDivisor)
}

func callLimit(ctx context.Context) int64 {
	if ctx != nil {
		if n, ok := ctx.Value(callLimitKey{}).(int64); ok && n > 0 {
			return n
		}
	}
	return DefaultEvalMemoryBytes / callBudgetDivisor
}

// HaltFlag is a topdown.Cancel for work OPA cannot cancel midway: parsing
// module after module, the compiler stage after stage (see Haltable).
type HaltFlag struct {
	flag atomic.Bool
	once sync.Once
	done chan struct{}
}

func NewHaltFlag() *HaltFlag { return &HaltFlag{done: make(chan struct{})} }

func (h *HaltFlag) Cancel() {
	h.once.Do(func() {
		h.flag.Store(true)
		close(h.done)
	})
}

func (h *HaltFlag) Cancelled() bool { return h.flag.Load() }

// Done is closed when the flag is set.
func (h *HaltFlag) Done() <-chan struct{} { return h.done }

var ErrHalted = errors.New("compilation halted")

// compilerStages are the compiler's stages; Haltable adds a check after
// each of them.
var compilerStages = []ast.StageID{
	ast.StageResolveRefs, ast.StageCheckUnusedImports, ast.StageInitLocalVarGen, ast.StageRewriteRuleHeadRefs,
	ast.StageCheckKeywordOverrides, ast.StageCheckDuplicateImports, ast.StageRemoveImports, ast.StageSetModuleTree,
	ast.StageSetRuleTree, ast.StageRewriteLocalVars, ast.StageRewriteTemplateStrings, ast.StageCheckVoidCalls,
	ast.StageRewritePrintCalls, ast.StageRewriteExprTerms, ast.StageParseMetadataBlocks, ast.StageSetAnnotationSet,
	ast.StageRewriteRegoMetadataCalls, ast.StageSetGraph, ast.StageRewriteComprehensionTerms, ast.StageRewriteRefsInHead,
	ast.StageRewriteWithValues, ast.StageCheckRuleConflicts, ast.StageCheckUndefinedFuncs, ast.StageCheckSafetyRuleHeads,
	ast.StageCheckSafetyRuleBodies, ast.StageRewriteEquals, ast.StageRewriteDynamicTerms, ast.StageRewriteTestRulesForTracing,
	ast.StageCheckRecursion, ast.StageCheckTypes, ast.StageCheckUnsafeBuiltins, ast.StageCheckDeprecatedBuiltins,
	ast.StageBuildRuleIndices, ast.StageBuildComprehensionIndices, ast.StageBuildRequiredCapabilities,
}

// Haltable makes c stop at the end of any stage once h is cancelled.
func Haltable(c *ast.Compiler, h topdown.Cancel) *ast.Compiler {
	for _, id := range compilerStages {
		c = c.WithStageAfterID(id, ast.CompilerStageDefinition{
			Name:       "ndp-sandbox-after-" + string(id),
			MetricName: "ndp_sandbox_after_" + string(id),
			Stage: func(*ast.Compiler) *ast.Error {
				if h.Cancelled() {
					return ast.NewError(ast.CompileErr, nil, "stopped by the sandbox")
				}
				return nil
			},
		})
	}
	return c
}
