package planner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rego layout: every policy's modules live under policyPackage.<root>, and
// the engine's generated module collects their claims in one query.
const (
	policyPackage = "ndp.policy"
	enginePackage = "ndp.engine"
	engineQuery   = "data.ndp.engine.claims"
	// engineFormat versions how policies become plans; it is part of every
	// policy revision, so plans are recomputed when it changes.
	engineFormat = "ndp-engine/v1"
)

// EngineOptions bound the work a policy set may cause.
type EngineOptions struct {
	// CompileTimeout bounds compiling the policy set (default 30s).
	CompileTimeout time.Duration
	// EvalTimeout bounds one evaluation (default 5s).
	EvalTimeout time.Duration
}

// Engine is a compiled policy set: it turns a change set into claims.
type Engine struct {
	*sources
	query       rego.PreparedEvalQuery
	revision    string
	evalTimeout time.Duration
}

// PolicyError says why a policy cannot be used, naming the policy, where it
// came from and, for Rego, the line and column.
type PolicyError struct {
	Policy   string
	Origin   string
	Messages []string
}

func (e *PolicyError) Error() string {
	msg := strings.Join(e.Messages, "; ")
	if e.Origin != "" && strings.HasPrefix(msg, e.Origin) {
		return msg // a Rego position already names the file or object
	}
	return e.Origin + ": " + msg
}

// Claim is one policy's claim on one change.
type Claim struct {
	Policy  string
	Change  string
	Match   string
	Actions []Action
	Reason  string
}

// NewEngine validates and compiles a policy set, library included, inside
// the sandbox. Policy names must be unique.
func NewEngine(ctx context.Context, pols []Policy, opts EngineOptions) (*Engine, error) {
	if opts.CompileTimeout <= 0 {
		opts.CompileTimeout = 30 * time.Second
	}
	if opts.EvalTimeout <= 0 {
		opts.EvalTimeout = 5 * time.Second
	}
	// Policies are checked in the caller's order, so that when two claim the
	// same package root the later one (a candidate added to an active set)
	// is the one reported; everything derived from the set is sorted.
	pols = append([]Policy(nil), pols...)
	e := &Engine{sources: newSources(), evalTimeout: opts.EvalTimeout}

	total := 0
	roots := map[string]string{} // package root → policy
	var rootOrder []string
	for i := range pols {
		p := &pols[i]
		if p.Name == "" {
			return nil, &PolicyError{Origin: p.Origin, Messages: []string{"metadata.name: Required value"}}
		}
		if prev, dup := e.policies[p.Name]; dup {
			return nil, &PolicyError{Policy: p.Name, Origin: p.Origin, Messages: []string{fmt.Sprintf("a policy named %q is already defined by %s", p.Name, prev.Origin)}}
		}
		e.policies[p.Name] = p
		if errs := p.Validate(); len(errs) > 0 {
			return nil, &PolicyError{Policy: p.Name, Origin: p.Origin, Messages: fieldMessages(errs)}
		}
		root := ""
		for j := range p.Modules {
			m := &p.Modules[j]
			total += len(m.Source)
			mod, err := e.parse(p, m)
			if err != nil {
				return nil, err
			}
			r, err := policyRoot(mod)
			if err != nil {
				return nil, &PolicyError{Policy: p.Name, Origin: p.Origin, Messages: []string{m.Position(mod.Package.Location.Row, mod.Package.Location.Col) + ": " + err.Error()}}
			}
			switch owner, taken := roots[r]; {
			case root != "" && r != root:
				return nil, &PolicyError{Policy: p.Name, Origin: p.Origin, Messages: []string{fmt.Sprintf("%s: all modules of a policy must share one package root, found %s.%s and %s.%s", m.Position(mod.Package.Location.Row, 1), policyPackage, root, policyPackage, r)}}
			case taken && owner != p.Name:
				return nil, &PolicyError{Policy: p.Name, Origin: p.Origin, Messages: []string{fmt.Sprintf("%s: package %s.%s is already owned by policy %q", m.Position(mod.Package.Location.Row, 1), policyPackage, r, owner)}}
			case !taken:
				roots[r] = p.Name
				rootOrder = append(rootOrder, r)
			}
			root = r
		}
	}
	if total > MaxPolicySetSize {
		return nil, fmt.Errorf("policy set is %d bytes of Rego, more than the limit of %d", total, MaxPolicySetSize)
	}
	lib, _ := libraryModules()
	for i := range lib {
		if _, err := e.parse(nil, &lib[i]); err != nil {
			return nil, err
		}
	}
	sort.Strings(rootOrder)
	wrapper := &Module{Filename: "ndp-engine.rego", Source: engineModule(rootOrder, roots)}
	if _, err := e.parse(nil, wrapper); err != nil {
		return nil, err
	}

	compiler := ast.NewCompiler().WithCapabilities(sandboxCapabilities).WithEnablePrintStatements(false)
	if err := e.compile(ctx, compiler, opts.CompileTimeout); err != nil {
		return nil, err
	}
	store := inmem.NewFromObject(map[string]any{"ndp": map[string]any{"declarative": declarativeData(pols)}})
	prepCtx, cancel := context.WithTimeout(ctx, opts.CompileTimeout)
	defer cancel()
	q, err := rego.New(
		rego.Query(engineQuery),
		rego.Compiler(compiler),
		rego.Store(store),
		rego.Capabilities(sandboxCapabilities),
		rego.StrictBuiltinErrors(true),
		rego.EnablePrintStatements(false),
	).PrepareForEval(prepCtx)
	if err != nil {
		return nil, fmt.Errorf("preparing policies: %w", err)
	}
	e.query = q
	sorted := append([]Policy(nil), pols...) // e.policies points into pols
	sortPolicies(sorted)
	e.revision = revision(sorted, lib)
	return e, nil
}

// compile runs the compiler with a deadline. The compiler cannot be
// interrupted, so on timeout it is left to finish in the background and its
// result is discarded.
func (e *Engine) compile(ctx context.Context, c *ast.Compiler, timeout time.Duration) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Compile(e.parsed)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		return fmt.Errorf("compiling policies took longer than %s", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.Failed() {
		return e.regoError(c.Errors, nil)
	}
	return nil
}

// policyRoot is the first package segment under ndp.policy.
func policyRoot(mod *ast.Module) (string, error) {
	path := mod.Package.Path
	// path[0] is "data".
	if len(path) < 4 || !path[1].Equal(ast.InternedTerm("ndp")) || !path[2].Equal(ast.InternedTerm("policy")) {
		return "", fmt.Errorf("package %s is not under %s: policy packages must be %s.<name>", strings.TrimPrefix(path.String(), "data."), policyPackage, policyPackage)
	}
	root, ok := path[3].Value.(ast.String)
	if !ok {
		return "", fmt.Errorf("package %s: invalid package name", path)
	}
	return string(root), nil
}

// engineModule collects every policy's claims, attributed to the policy,
// and the declarative entries' claims, which carry their own attribution.
func engineModule(roots []string, owners map[string]string) string {
	var b strings.Builder
	b.WriteString("package " + enginePackage + "\n\n")
	b.WriteString("claims contains {\"policy\": p, \"claim\": c} if {\n\tsome [p, c] in data.ndp.builtin.declarative.claims\n}\n")
	for _, r := range roots {
		fmt.Fprintf(&b, "\nclaims contains {\"policy\": %s, \"claim\": c} if {\n\tsome c in data.%s[%s].claims\n}\n",
			strconv.Quote(owners[r]), policyPackage, strconv.Quote(r))
	}
	return b.String()
}

// revision digests everything that decides a plan: the engine format, the
// library and each policy's name, priority, entries and Rego.
func revision(pols []Policy, lib []Module) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(engineFormat)
	for _, m := range lib {
		_ = enc.Encode(m.Source)
	}
	for _, p := range pols {
		_ = enc.Encode([]any{p.Name, p.Priority, p.PoolSelector, p.Files, p.Units, p.SSHKey})
		for _, m := range p.Modules {
			_ = enc.Encode(m.Source)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Revision is the digest of the compiled policy set; plans record it.
func (e *Engine) Revision() string { return e.revision }

// Policy returns a policy of the set by name.
func (e *Engine) Policy(name string) (*Policy, bool) {
	p, ok := e.policies[name]
	return p, ok
}

// Evaluate runs the policies on a change set and returns the claims, each
// checked: it must name a change of the set, match it, and carry a valid
// action list.
func (e *Engine) Evaluate(ctx context.Context, cs *ChangeSet) ([]Claim, error) {
	ctx, cancel := context.WithTimeout(ctx, e.evalTimeout)
	defer cancel()
	input, err := ast.InterfaceToValue(cs.regoInput())
	if err != nil {
		return nil, fmt.Errorf("building policy input: %w", err)
	}
	rs, err := e.query.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return nil, e.evalError(err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, nil
	}
	raw, ok := rs[0].Expressions[0].Value.([]any)
	if !ok {
		return nil, fmt.Errorf("policy claims are %T, expected a set", rs[0].Expressions[0].Value)
	}
	byID := make(map[string]*Change, len(cs.Changes))
	for i := range cs.Changes {
		byID[cs.Changes[i].ID] = &cs.Changes[i]
	}
	claims := make([]Claim, 0, len(raw))
	for _, r := range raw {
		obj, _ := r.(map[string]any)
		name, _ := obj["policy"].(string)
		c, err := decodeClaim(obj["claim"], byID)
		if err != nil {
			p := e.policies[name]
			origin := name
			if p != nil {
				origin = p.Origin
			}
			return nil, &PolicyError{Policy: name, Origin: origin, Messages: []string{err.Error()}}
		}
		c.Policy = name
		claims = append(claims, c)
	}
	return claims, nil
}

func (e *Engine) evalError(err error) error {
	var te *topdown.Error
	if errors.As(err, &te) {
		msg := te.Code + ": " + te.Message
		if te.Location != nil {
			if m, ok := e.modules[te.Location.File]; ok {
				msg = m.Position(te.Location.Row, te.Location.Col) + ": " + msg
				if p := e.ownerOf(m); p != nil {
					return &PolicyError{Policy: p.Name, Origin: p.Origin, Messages: []string{msg}}
				}
			}
		}
		return fmt.Errorf("evaluating policies: %s", msg)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("evaluating policies took longer than %s", e.evalTimeout)
	}
	return fmt.Errorf("evaluating policies: %w", err)
}

// decodeClaim checks one claim object produced by Rego.
func decodeClaim(v any, changes map[string]*Change) (Claim, error) {
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
	if c.Match != "" && c.Match != change.Path && c.Match != change.Name && !containsString(change.Dirs, c.Match) {
		return Claim{}, fmt.Errorf("claim on %s: match %q is neither the change's path or name nor one of its directories", c.Change, c.Match)
	}
	actions, err := decodeActions(obj["actions"])
	if err != nil {
		return Claim{}, fmt.Errorf("claim on %s: %w", c.Change, err)
	}
	if errs := ValidateActions(field.NewPath("actions"), actions); len(errs) > 0 {
		return Claim{}, fmt.Errorf("claim on %s: %s", c.Change, strings.Join(fieldMessages(errs), "; "))
	}
	c.Actions = actions
	return c, nil
}

func decodeActions(v any) ([]Action, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("actions must be a list, got %s", brief(v))
	}
	out := make([]Action, 0, len(list))
	for i, item := range list {
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("actions[%d] must be an object, got %s", i, brief(item))
		}
		var a Action
		for k, val := range obj {
			switch k {
			case "type":
				s, _ := val.(string)
				a.Type = operatorv1ActionType(s)
			case "reload", "restart":
				svc, ok := val.(map[string]any)
				name, _ := svc["serviceName"].(string)
				if !ok || len(svc) != 1 || name == "" {
					return nil, fmt.Errorf("actions[%d].%s must be {\"serviceName\": \"<unit>\"}, got %s", i, k, brief(val))
				}
				if k == "reload" {
					a.Reload = reloadService(name)
				} else {
					a.Restart = restartService(name)
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

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func fieldMessages(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	sort.Strings(out)
	return out
}

// regoInput is the change set as Rego input, built as plain maps so that
// converting it to an AST value needs no JSON round trip.
func (cs *ChangeSet) regoInput() map[string]any {
	changes := make([]any, len(cs.Changes))
	for i := range cs.Changes {
		changes[i] = cs.Changes[i].regoValue()
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

func (c *Change) regoValue() map[string]any {
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
	if c.Kind == KindFile && c.Fields == nil {
		m["fields"] = []any{}
	}
	return m
}
