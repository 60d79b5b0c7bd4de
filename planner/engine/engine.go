package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/planner/sandbox"
)

// The engine's generated module collects the policies' claims in one query.
const (
	enginePackage = "ndp.engine"
	engineQuery   = "data.ndp.engine.claims"
)

// Options bound the work a policy set may cause.
type Options struct {
	// CompileTimeout bounds compiling the policy set (default 30s).
	CompileTimeout time.Duration
	// EvalTimeout bounds one evaluation (default 5s).
	EvalTimeout time.Duration
	// EvalMemoryBytes bounds how far the Go heap may grow while one
	// evaluation runs (default DefaultEvalMemoryBytes, 256 MiB): a
	// watchdog samples the heap every few milliseconds and stops the
	// evaluation past it. One builtin call may allocate at most a quarter
	// of it (guards.go). The heap is the process's: evaluations running
	// at the same time share the budget.
	EvalMemoryBytes int64
	// AlwaysContent puts file contents in the Rego input even when no
	// policy of the set names them (readsContent): for measuring what
	// they cost.
	AlwaysContent bool
}

func (o Options) withDefaults() Options {
	if o.CompileTimeout <= 0 {
		o.CompileTimeout = 30 * time.Second
	}
	if o.EvalTimeout <= 0 {
		o.EvalTimeout = 5 * time.Second
	}
	if o.EvalMemoryBytes <= 0 {
		o.EvalMemoryBytes = sandbox.DefaultEvalMemoryBytes
	}
	return o
}

// Engine is a compiled policy set: it turns a change set into claims.
type Engine struct {
	src      *policy.Sources // the parsed modules and who owns each
	query    rego.PreparedEvalQuery
	revision string
	opts     Options
	// content: the input carries file contents (some policy reads them).
	content bool

	// What it takes to evaluate one policy's claims alone, to name the
	// policy when an evaluation is stopped.
	compiler   *ast.Compiler
	store      storage.Store
	rootOrder  []string
	rootOwners map[string]string // package root → policy
	soloMu     sync.Mutex
	solo       map[string]rego.PreparedEvalQuery
}

// Claim is one policy's claim on one change.
type Claim struct {
	Policy  string
	Change  string
	Match   string
	Actions []policy.Action
	Reason  string
}

// New validates and compiles a policy set, library included, inside
// the sandbox. Policy names must be unique.
func New(ctx context.Context, pols []policy.Policy, opts Options) (*Engine, error) {
	sandbox.Install()
	opts = opts.withDefaults()
	// Policies are checked in the caller's order, so that when two claim the
	// same package root the later one (a candidate added to an active set)
	// is the one reported; everything derived from the set is sorted.
	pols = append([]policy.Policy(nil), pols...)
	e := &Engine{src: policy.NewSources(), opts: opts}
	// Parsing and compiling cost a hundred times the Rego's size and more:
	// the memory watchdog and the deadline stop them, between two modules
	// or two compiler stages.
	cctx, cancel := context.WithTimeout(ctx, opts.CompileTimeout)
	defer cancel()
	halt := sandbox.NewHaltFlag()
	w := sandbox.WatchMemory(cctx, opts.EvalMemoryBytes, halt)
	defer w.Stop()
	stopped := func() error {
		if !halt.Cancelled() {
			return nil
		}
		if w.Tripped() {
			return e.compileOverBudget(pols)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("compiling policies took longer than %s", opts.CompileTimeout)
	}

	total := 0
	roots := map[string]string{} // package root → policy
	var rootOrder []string
	for i := range pols {
		p := &pols[i]
		if p.Name == "" {
			return nil, &policy.Error{Origin: p.Origin, Messages: []string{"metadata.name: Required value"}}
		}
		if prev, dup := e.src.AddPolicy(p); dup {
			return nil, &policy.Error{Policy: p.Name, Origin: p.Origin, Messages: []string{fmt.Sprintf("a policy named %q is already defined by %s", p.Name, prev.Origin)}}
		}
		if errs := p.Validate(); len(errs) > 0 {
			return nil, &policy.Error{Policy: p.Name, Origin: p.Origin, Messages: fieldMessages(errs)}
		}
		root := ""
		for j := range p.Modules {
			m := &p.Modules[j]
			total += len(m.Source)
			if err := stopped(); err != nil {
				return nil, err
			}
			mod, err := e.src.Parse(p, m)
			if err != nil {
				return nil, err
			}
			r, err := policy.Root(mod)
			if err != nil {
				return nil, &policy.Error{Policy: p.Name, Origin: p.Origin, Messages: []string{m.Position(mod.Package.Location.Row, mod.Package.Location.Col) + ": " + err.Error()}}
			}
			switch owner, taken := roots[r]; {
			case root != "" && r != root:
				return nil, &policy.Error{Policy: p.Name, Origin: p.Origin, Messages: []string{fmt.Sprintf("%s: all modules of a policy must share one package root, found %s.%s and %s.%s", m.Position(mod.Package.Location.Row, 1), policy.Package, root, policy.Package, r)}}
			case taken && owner != p.Name:
				return nil, &policy.Error{Policy: p.Name, Origin: p.Origin, Messages: []string{fmt.Sprintf("%s: package %s.%s is already owned by policy %q", m.Position(mod.Package.Location.Row, 1), policy.Package, r, owner)}}
			case !taken:
				roots[r] = p.Name
				rootOrder = append(rootOrder, r)
			}
			root = r
		}
	}
	if total > policy.MaxPolicySetSize {
		return nil, fmt.Errorf("policy set is %d bytes of Rego, more than the limit of %d", total, policy.MaxPolicySetSize)
	}
	lib, _ := policy.LibraryModules()
	for i := range lib {
		if _, err := e.src.Parse(nil, &lib[i]); err != nil {
			return nil, err
		}
	}
	sort.Strings(rootOrder)
	wrapper := &policy.Module{Filename: "ndp-engine.rego", Source: engineModule(rootOrder, roots)}
	if _, err := e.src.Parse(nil, wrapper); err != nil {
		return nil, err
	}

	compiler := sandbox.Haltable(ast.NewCompiler().WithCapabilities(sandbox.Capabilities).WithEnablePrintStatements(false), halt)
	if err := e.compile(cctx, compiler, halt); err != nil {
		if serr := stopped(); serr != nil {
			return nil, serr
		}
		return nil, err
	}
	store := inmem.NewFromObject(map[string]any{"ndp": map[string]any{"declarative": policy.DeclarativeData(pols)}})
	q, err := rego.New(
		rego.Query(engineQuery),
		rego.Compiler(compiler),
		rego.Store(store),
		rego.Capabilities(sandbox.Capabilities),
		rego.StrictBuiltinErrors(true),
		rego.EnablePrintStatements(false),
	).PrepareForEval(cctx)
	if err != nil {
		if serr := stopped(); serr != nil {
			return nil, serr
		}
		return nil, fmt.Errorf("preparing policies: %w", err)
	}
	e.query = q
	e.compiler, e.store, e.rootOrder, e.rootOwners = compiler, store, rootOrder, roots
	e.content = opts.AlwaysContent || readsContent(compiler)
	sorted := append([]policy.Policy(nil), pols...) // e.policies points into pols
	policy.Sort(sorted)
	e.revision = policy.Revision(sorted, lib)
	return e, nil
}

// compile runs the compiler until ctx ends (the deadline) or halt is set
// (the deadline or the memory watchdog). The compiler stops at the end of
// its current stage; it is left to get there in the background and its
// result is discarded.
func (e *Engine) compile(ctx context.Context, c *ast.Compiler, halt *sandbox.HaltFlag) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Compile(e.src.ParsedModules())
	}()
	select {
	case <-done:
	case <-ctx.Done():
		halt.Cancel()
		return ctx.Err()
	case <-halt.Done():
		return sandbox.ErrHalted
	}
	if halt.Cancelled() {
		return sandbox.ErrHalted
	}
	if c.Failed() {
		return e.src.RegoError(c.Errors, nil)
	}
	return nil
}

// compileOverBudget is the error of a compilation the watchdog stopped. No
// one policy is to blame for the size of a set, but the largest is named.
func (e *Engine) compileOverBudget(pols []policy.Policy) error {
	total, largest, size := 0, -1, 0
	for i := range pols {
		n := 0
		for _, m := range pols[i].Modules {
			n += len(m.Source)
		}
		total += n
		if n > size {
			largest, size = i, n
		}
	}
	msg := fmt.Sprintf("compiling policies used more than %s of memory: the sandbox stopped it (the set holds %s of Rego", sandbox.FormatBytes(e.opts.EvalMemoryBytes), sandbox.FormatBytes(int64(total)))
	if largest < 0 {
		return sandbox.NewLimitError(sandbox.ErrEvalMemory, msg+")")
	}
	p := &pols[largest]
	return &policy.Error{Policy: p.Name, Origin: p.Origin, Err: sandbox.ErrEvalMemory,
		Messages: []string{fmt.Sprintf("%s; the largest policy, %q, %s)", msg, p.Name, sandbox.FormatBytes(int64(size)))}}
}

// engineModule collects every policy's claims, attributed to the policy,
// and the declarative entries' claims, which carry their own attribution.
func engineModule(roots []string, owners map[string]string) string {
	var b strings.Builder
	b.WriteString("package " + enginePackage + "\n\n")
	b.WriteString("claims contains {\"policy\": p, \"claim\": c} if {\n\tsome [p, c] in data.ndp.builtin.declarative.claims\n}\n")
	for _, r := range roots {
		fmt.Fprintf(&b, "\nclaims contains {\"policy\": %s, \"claim\": c} if {\n\tsome c in data.%s[%s].claims\n}\n",
			strconv.Quote(owners[r]), policy.Package, strconv.Quote(r))
	}
	return b.String()
}

// Revision is the digest of the compiled policy set; plans record it.
func (e *Engine) Revision() string { return e.revision }

// Policy returns a policy of the set by name.
func (e *Engine) Policy(name string) (*policy.Policy, bool) {
	p, ok := e.src.PolicyNamed(name)
	return p, ok
}

// Evaluate runs the policies on a change set and returns the claims, each
// checked: it must name a change of the set, match it, and carry a valid
// action list.
func (e *Engine) Evaluate(ctx context.Context, cs *changeset.ChangeSet) ([]Claim, error) {
	return e.EvaluateNaming(ctx, cs, "")
}

// EvaluateNaming is Evaluate; when the sandbox stops the evaluation, the error
// names suspect if given, else the policy whose claims alone exceed the
// same limit, if one does.
func (e *Engine) EvaluateNaming(ctx context.Context, cs *changeset.ChangeSet, suspect string) ([]Claim, error) {
	input, err := ast.InterfaceToValue(regoInput(cs, e.content))
	if err != nil {
		return nil, fmt.Errorf("building policy input: %w", err)
	}
	rs, err := e.run(ctx, e.query, input)
	if err != nil {
		return nil, e.explain(ctx, err, input, suspect)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, nil
	}
	raw, ok := rs[0].Expressions[0].Value.([]any)
	if !ok {
		return nil, fmt.Errorf("policy claims are %T, expected a set", rs[0].Expressions[0].Value)
	}
	byID := make(map[string]*changeset.Change, len(cs.Changes))
	for i := range cs.Changes {
		byID[cs.Changes[i].ID] = &cs.Changes[i]
	}
	claims := make([]Claim, 0, len(raw))
	for _, r := range raw {
		obj, _ := r.(map[string]any)
		name, _ := obj["policy"].(string)
		c, err := decodeClaim(obj["claim"], byID)
		if err != nil {
			p, _ := e.src.PolicyNamed(name)
			origin := name
			if p != nil {
				origin = p.Origin
			}
			return nil, &policy.Error{Policy: name, Origin: origin, Messages: []string{err.Error()}}
		}
		c.Policy = name
		claims = append(claims, c)
	}
	return claims, nil
}

// stoppedEval is an evaluation the sandbox stopped, by its deadline or its
// memory watchdog.
type stoppedEval struct {
	err error // ErrEvalMemory or ErrEvalTimeout
}

func (s *stoppedEval) Error() string { return s.err.Error() }

// run evaluates a prepared query in the sandbox: under the deadline, with
// the memory watchdog, and with the per-call limit the guarded builtins
// read.
func (e *Engine) run(parent context.Context, q rego.PreparedEvalQuery, input ast.Value) (rego.ResultSet, error) {
	ctx, cancel := context.WithTimeout(parent, e.opts.EvalTimeout)
	defer cancel()
	ctx = sandbox.WithCallLimit(ctx, e.opts.EvalMemoryBytes)
	c := topdown.NewCancel()
	w := sandbox.WatchMemory(ctx, e.opts.EvalMemoryBytes, c)
	rs, err := q.Eval(ctx, rego.EvalParsedInput(input), rego.EvalExternalCancel(c))
	tripped, _ := w.Stop()
	switch {
	case err == nil:
		return rs, nil
	case tripped:
		return nil, &stoppedEval{err: sandbox.ErrEvalMemory}
	case parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && topdown.IsCancel(err):
		return nil, &stoppedEval{err: sandbox.ErrEvalTimeout}
	}
	return nil, err
}

// explain turns an evaluation error into a message for the author. When
// the sandbox stopped the evaluation, it names the policy responsible: the
// suspect if given, else the first policy whose claims alone are stopped
// too (their evaluation is repeated, one policy at a time, under the same
// limits; it costs one more deadline at most, and only on failure).
func (e *Engine) explain(ctx context.Context, err error, input ast.Value, suspect string) error {
	var st *stoppedEval
	if !errors.As(err, &st) {
		return e.src.EvalError(err)
	}
	msg := e.limitMessage(st.err)
	if suspect == "" && ctx.Err() == nil {
		suspect = e.culprit(ctx, input)
	}
	p, _ := e.src.PolicyNamed(suspect)
	if p == nil {
		return sandbox.NewLimitError(st.err, msg+": the sandbox stopped the evaluation (no one policy exceeds the limit alone)")
	}
	return &policy.Error{Policy: p.Name, Origin: p.Origin, Err: st.err,
		Messages: []string{fmt.Sprintf("%s (policy %q: the sandbox stopped the evaluation)", msg, p.Name)}}
}

func (e *Engine) limitMessage(kind error) string {
	if kind == sandbox.ErrEvalMemory {
		return fmt.Sprintf("evaluating policies used more than %s of memory", sandbox.FormatBytes(e.opts.EvalMemoryBytes))
	}
	return fmt.Sprintf("evaluating policies took longer than %s", e.opts.EvalTimeout)
}

// culprit evaluates each Rego policy's claims alone, in package order, and
// returns the first that the sandbox stops or that fails, or "".
func (e *Engine) culprit(ctx context.Context, input ast.Value) string {
	pm, cancel := context.WithTimeout(ctx, e.opts.EvalTimeout)
	defer cancel()
	for _, root := range e.rootOrder {
		q, err := e.soloQuery(pm, root)
		if err != nil {
			continue
		}
		// Any failure names the policy: the others take milliseconds, so
		// one that runs out of the time left is the slow one.
		if _, err := e.run(pm, q, input); err != nil {
			if ctx.Err() != nil {
				return ""
			}
			return e.rootOwners[root]
		}
	}
	return ""
}

// soloQuery prepares, once, the query of one package root's claims.
func (e *Engine) soloQuery(ctx context.Context, root string) (rego.PreparedEvalQuery, error) {
	e.soloMu.Lock()
	defer e.soloMu.Unlock()
	if q, ok := e.solo[root]; ok {
		return q, nil
	}
	q, err := rego.New(
		rego.Query(fmt.Sprintf("data.%s[%s].claims", policy.Package, strconv.Quote(root))),
		rego.Compiler(e.compiler),
		rego.Store(e.store),
		rego.Capabilities(sandbox.Capabilities),
		rego.StrictBuiltinErrors(true),
		rego.EnablePrintStatements(false),
	).PrepareForEval(ctx)
	if err != nil {
		return q, err
	}
	if e.solo == nil {
		e.solo = map[string]rego.PreparedEvalQuery{}
	}
	e.solo[root] = q
	return q, nil
}

// decodeClaim checks one claim object produced by Rego.
func decodeClaim(v any, changes map[string]*changeset.Change) (Claim, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return Claim{}, fmt.Errorf("a claim must be an object with change and actions, got %s", brief(v))
	}
	var c Claim
	for k, val := range obj {
		switch k {
		case "change", "match", "reason":
			s, ok := val.(string)
			if !ok {
				return Claim{}, fmt.Errorf("claim %s: %s must be a string", brief(v), k)
			}
			switch k {
			case "change":
				c.Change = s
			case "match":
				c.Match = s
			case "reason":
				c.Reason = s
			}
		case "actions":
		default:
			return Claim{}, fmt.Errorf("claim %s: unknown field %q (allowed: change, actions, match, reason)", brief(v), k)
		}
	}
	change, ok := changes[c.Change]
	if !ok {
		return Claim{}, fmt.Errorf("claim %s: change %q is not in the change set", brief(v), c.Change)
	}
	if c.Match != "" && c.Match != change.Name && (change.Path == "" || !changeset.Covers(c.Match, change.Path)) {
		return Claim{}, fmt.Errorf("claim on %s: match %q is neither the change's path or name nor one of its directories", c.Change, c.Match)
	}
	actions, err := decodeActions(obj["actions"])
	if err != nil {
		return Claim{}, fmt.Errorf("claim on %s: %w", c.Change, err)
	}
	if errs := policy.ValidateActions(field.NewPath("actions"), actions); len(errs) > 0 {
		return Claim{}, fmt.Errorf("claim on %s: %s", c.Change, strings.Join(fieldMessages(errs), "; "))
	}
	c.Actions = actions
	return c, nil
}

func decodeActions(v any) ([]policy.Action, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("actions must be a list, got %s", brief(v))
	}
	out := make([]policy.Action, 0, len(list))
	for i, item := range list {
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("actions[%d] must be an object, got %s", i, brief(item))
		}
		var a policy.Action
		for k, val := range obj {
			switch k {
			case "type":
				s, _ := val.(string)
				a.Type = policy.ActionType(s)
			case "reload", "restart":
				svc, ok := val.(map[string]any)
				name, _ := svc["serviceName"].(string)
				if !ok || len(svc) != 1 || name == "" {
					return nil, fmt.Errorf("actions[%d].%s must be {\"serviceName\": \"<unit>\"}, got %s", i, k, brief(val))
				}
				if k == "reload" {
					a.Reload = policy.ReloadService(name)
				} else {
					a.Restart = policy.RestartService(name)
				}
			default:
				return nil, fmt.Errorf("actions[%d]: unknown field %q", i, k)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// brief renders a Rego value for an error message, cut to a readable size.
func brief(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if len(b) > 120 {
		return string(b[:117]) + "..."
	}
	return string(b)
}

func fieldMessages(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	sort.Strings(out)
	return out
}

// ReadsContent reports whether the compiled set's input carries file
// contents: some policy names them, or Options.AlwaysContent.
func (e *Engine) ReadsContent() bool { return e.content }

// regoInput is the change set as Rego input, built as plain maps so that
// converting it to an AST value needs no JSON round trip; with content,
// file changes carry their contents (old, new, diff).
func regoInput(cs *changeset.ChangeSet, content bool) map[string]any {
	changes := make([]any, len(cs.Changes))
	for i := range cs.Changes {
		v := regoValue(&cs.Changes[i])
		if content {
			contentValues(v, cs, &cs.Changes[i])
		}
		changes[i] = v
	}
	in := map[string]any{
		"from":       cs.From,
		"to":         cs.To,
		"pool":       cs.Pool,
		"singleNode": cs.SingleNode,
		"changes":    changes,
	}
	if cs.Registries != nil {
		var m map[string]any
		b, _ := json.Marshal(cs.Registries)
		_ = json.Unmarshal(b, &m)
		in["registries"] = m
	}
	return in
}

func regoValue(c *changeset.Change) map[string]any {
	m := map[string]any{"id": c.ID, "kind": c.Kind, "op": c.Op}
	setString := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	setList := func(k string, v []string) {
		if v != nil {
			l := make([]any, len(v))
			for i, s := range v {
				l[i] = s
			}
			m[k] = l
		}
	}
	setString("path", c.Path)
	setString("name", c.Name)
	setString("oldDigest", c.OldDigest)
	setString("newDigest", c.NewDigest)
	setString("source", c.Source)
	setList("dirs", c.Dirs)
	setList("fields", c.Fields)
	setList("dropins", c.Dropins)
	setList("added", c.Added)
	setList("removed", c.Removed)
	for k, v := range map[string]any{"old": c.Old, "new": c.New} {
		switch x := v.(type) {
		case string:
			m[k] = x
		case []string:
			setList(k, x)
		}
	}
	if c.Kind == changeset.KindFile && c.Fields == nil {
		m["fields"] = []any{}
	}
	return m
}
