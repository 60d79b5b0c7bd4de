package sandbox

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// OPA stops an evaluation between expressions, and inside a few builtins
// that produce their result bit by bit (numbers.range, walk, the
// replacements writing through a cancellable buffer). Other builtins build
// their whole result in one call that nothing interrupts: concat of a list
// that repeats one long string, sprintf with wide fields, json.marshal of a
// value that shares one big string many times, split of a long string... One
// such call can ask for gigabytes at once, and a failed allocation kills the
// process, whatever the watchdog does. So the sandbox wraps them: before the
// call, an upper bound of what it allocates is computed from its operands,
// and a call over the per-call limit (a quarter of the evaluation's memory
// budget, 64 MiB by default) fails with a clear error instead.
//
// Regular expressions are compiled once and cached by OPA across
// evaluations (up to 100 patterns): a pattern may be at most MaxRegexBytes
// long and compile to at most MaxRegexInstructions instructions (Go's RE2
// runs in linear time; it is the compiled program that costs memory).
//
// The wrappers replace OPA's implementations process-wide (OPA looks its
// builtins up in one global table), when Install is called: the engine and
// the Rego test runner call it before they compile anything, and ndp's
// binaries evaluate Rego only through them.

// Limits on the regular expressions and glob patterns of a policy.
const (
	MaxRegexBytes        = 16 << 10
	MaxRegexInstructions = 20000
)

// termBytes is what one element of a produced array or set costs: the term,
// its boxed value, and the array's pointer and hash slots.
const termBytes = 64

// estimator returns an upper bound, in bytes, of what a builtin call with
// these operands allocates, or an error that refuses the call. It returns 0
// for operands of the wrong type: the builtin reports those itself. It may
// stop counting once the bound passes limit, and then returns MaxInt64.
type estimator func(ops []*ast.Term, limit int64) (int64, error)

var guards = map[string]estimator{
	ast.Concat.Name:                     estimateConcat,
	ast.Sprintf.Name:                    estimateSprintf,
	ast.InternalTemplateString.Name:     estimatePrint,
	ast.InternalPrint.Name:              estimatePrint,
	ast.Replace.Name:                    estimateReplace,
	ast.ReplaceN.Name:                   estimateReplaceN,
	ast.Split.Name:                      estimateSplit,
	ast.SplitN.Name:                     estimateSplit,
	ast.IndexOfN.Name:                   estimateIndexOfN,
	ast.ArrayFlatten.Name:               estimateFlatten,
	ast.JSONMarshal.Name:                estimateMarshal(false),
	ast.JSONMarshalWithOptions.Name:     estimateMarshal(true),
	ast.YAMLMarshal.Name:                estimateYAML,
	ast.URLQueryEncodeObject.Name:       estimateURLQueryObject,
	ast.JSONUnmarshal.Name:              estimateUnmarshal,
	ast.YAMLUnmarshal.Name:              estimateUnmarshal,
	ast.RegexMatch.Name:                 estimateRegex(0, -1, nil),
	ast.RegexMatchDeprecated.Name:       estimateRegex(0, -1, nil),
	ast.RegexIsValid.Name:               estimateRegex(0, -1, nil),
	ast.RegexSplit.Name:                 estimateRegex(0, 1, regexSplitBytes),
	ast.RegexFind.Name:                  estimateRegex(0, 1, regexFindBytes),
	ast.RegexFindAllStringSubmatch.Name: estimateRegex(0, 1, regexSubmatchBytes),
	ast.RegexReplace.Name:               estimateRegex(1, 0, regexReplaceBytes),
	ast.GlobMatch.Name:                  estimateGlob,
}

var installOnce sync.Once

// Install replaces OPA's unbounded builtins with their guarded versions, in
// OPA's global builtin table, once per process. Every caller that compiles
// or evaluates Rego calls it first; later calls do nothing.
func Install() {
	installOnce.Do(func() {
		for name, est := range guards {
			orig := topdown.GetBuiltin(name)
			if orig == nil {
				panic("sandbox: no OPA builtin " + name + " to guard") // an OPA upgrade removed one: caught by every test
			}
			topdown.RegisterBuiltinFunc(name, guarded(name, est, orig))
		}
	})
}

func guarded(name string, est estimator, orig topdown.BuiltinFunc) topdown.BuiltinFunc {
	return func(bctx topdown.BuiltinContext, ops []*ast.Term, iter func(*ast.Term) error) error {
		limit := callLimit(bctx.Context)
		need, err := est(ops, limit)
		switch {
		case err != nil:
		case need == math.MaxInt64: // the estimator stopped counting
			err = fmt.Errorf("its result could take more than the %s one builtin call may allocate in an ndp policy", FormatBytes(limit))
		case need > limit:
			err = fmt.Errorf("its result could take up to %s, more than the %s one builtin call may allocate in an ndp policy", FormatBytes(need), FormatBytes(limit))
		}
		if err != nil {
			// Halt: the call is refused even where builtin errors
			// would only make the expression undefined.
			return topdown.Halt{Err: &topdown.Error{Code: topdown.BuiltinErr, Message: name + ": " + err.Error(), Location: bctx.Location}}
		}
		return orig(bctx, ops, iter)
	}
}

// satAdd and satMul saturate instead of overflowing.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func stringOp(ops []*ast.Term, i int) (string, bool) {
	if i >= len(ops) {
		return "", false
	}
	s, ok := ops[i].Value.(ast.String)
	return string(s), ok
}

// elements iterates the elements of an array or set.
func elements(v ast.Value, f func(*ast.Term) bool) bool {
	switch c := v.(type) {
	case *ast.Array:
		for i := 0; i < c.Len(); i++ {
			if !f(c.Elem(i)) {
				return true
			}
		}
		return true
	case ast.Set:
		_ = c.Iter(func(t *ast.Term) error {
			if !f(t) {
				return errStop
			}
			return nil
		})
		return true
	}
	return false
}

func estimateConcat(ops []*ast.Term, _ int64) (int64, error) {
	sep, ok := stringOp(ops, 0)
	if !ok || len(ops) < 2 {
		return 0, nil
	}
	var n int64
	first := true
	elements(ops[1].Value, func(t *ast.Term) bool {
		if s, ok := t.Value.(ast.String); ok {
			n = satAdd(n, int64(len(s)))
		}
		if !first {
			n = satAdd(n, int64(len(sep)))
		}
		first = false
		return true
	})
	return n, nil
}

// estimateSprintf bounds the output of fmt.Sprintf: the format, every
// field's width and precision (fmt caps each at 10^6), and each argument's
// text, every time a verb may print it (explicit argument indexes may print
// one argument many times).
func estimateSprintf(ops []*ast.Term, limit int64) (int64, error) {
	format, ok := stringOp(ops, 0)
	if !ok || len(ops) < 2 {
		return 0, nil
	}
	args, ok := ops[1].Value.(*ast.Array)
	if !ok {
		return 0, nil
	}
	verbs, widths, indexed := scanFormat(format)
	// Text of the arguments: strings as they are (%q or %x may escape
	// each byte into up to four), other values as OPA renders them.
	var total, longest int64
	for i := 0; i < args.Len(); i++ {
		var n int64
		if s, ok := args.Elem(i).Value.(ast.String); ok {
			n = satMul(int64(len(s)), 4)
		} else {
			n = satMul(valueText(args.Elem(i).Value, limit), 4)
		}
		total = satAdd(total, n)
		longest = max(longest, n)
		if total > limit && !indexed {
			return math.MaxInt64, nil
		}
	}
	n := satAdd(int64(len(format)), widths)
	if indexed {
		return satAdd(n, satMul(int64(verbs), longest)), nil
	}
	return satAdd(n, total), nil
}

// scanFormat counts a format's verbs, adds up their widths and precisions
// (each at most 10^6, as in fmt; a "*" takes its value from an argument,
// so counts as the maximum) and tells whether any uses an argument index.
func scanFormat(f string) (verbs int, widths int64, indexed bool) {
	const fmtMaxWidth = 1000000
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		num := int64(0)
		for ; i < len(f); i++ {
			c := f[i]
			switch {
			case c >= '0' && c <= '9':
				num = min(num*10+int64(c-'0'), fmtMaxWidth)
				continue
			case c == '*':
				widths += fmtMaxWidth
				continue
			case c == '.':
				widths += num
				num = 0
				continue
			case c == '[':
				indexed = true
				if j := strings.IndexByte(f[i:], ']'); j > 0 {
					i += j
				}
				continue
			case c == '+' || c == '-' || c == '#' || c == ' ':
				continue
			}
			break
		}
		widths += num
		verbs++
	}
	return verbs, widths, indexed
}

// valueText bounds the length of a value's text, in Rego's syntax or JSON:
// each string counted with the escapes it may need, every time it appears.
// It stops counting once past limit.
func valueText(v ast.Value, limit int64) int64 {
	var n int64
	var walk func(v ast.Value) bool
	walk = func(v ast.Value) bool {
		switch x := v.(type) {
		case ast.String:
			n = satAdd(n, escapedLen(string(x))+4)
		case ast.Number:
			n = satAdd(n, int64(len(x))+2)
		case ast.Boolean, ast.Null:
			n = satAdd(n, 7)
		case *ast.Array:
			n = satAdd(n, 2)
			for i := 0; i < x.Len() && n <= limit; i++ {
				walk(x.Elem(i).Value)
			}
		case ast.Set:
			n = satAdd(n, 2)
			elements(x, func(t *ast.Term) bool { return walk(t.Value) })
		case ast.Object:
			n = satAdd(n, 2)
			_ = x.Iter(func(k, val *ast.Term) error {
				walk(k.Value)
				walk(val.Value)
				if n > limit {
					return errStop
				}
				return nil
			})
		default:
			n = satAdd(n, int64(len(v.String())))
		}
		return n <= limit
	}
	if !walk(v) {
		return math.MaxInt64
	}
	return n
}

var errStop = errors.New("stop")

// escapedLen bounds a string's length once quoted: a control character,
// quote, backslash, HTML character or byte outside ASCII may take up to six.
func escapedLen(s string) int64 {
	n := int64(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c >= 0x80, c == '"', c == '\\', c == '<', c == '>', c == '&':
			n += 5
		}
	}
	return n
}

// estimatePrint bounds print and template strings: one line per
// combination of the operands' values.
func estimatePrint(ops []*ast.Term, limit int64) (int64, error) {
	if len(ops) < 1 {
		return 0, nil
	}
	arr, ok := ops[0].Value.(*ast.Array)
	if !ok {
		return 0, nil
	}
	lines, width := int64(1), int64(0)
	for i := 0; i < arr.Len(); i++ {
		switch x := arr.Elem(i).Value.(type) {
		case ast.Set:
			lines = satMul(lines, int64(max(1, x.Len())))
			var longest int64
			elements(x, func(t *ast.Term) bool {
				longest = max(longest, valueText(t.Value, limit))
				return longest <= limit
			})
			width = satAdd(width, satAdd(longest, 1))
		default:
			width = satAdd(width, satAdd(valueText(x, limit), 1))
		}
	}
	return satMul(lines, width), nil
}

// occurrences bounds the matches a replacement or split finds: the
// non-overlapping occurrences, and for an empty needle one per byte and one
// more.
func occurrences(s, old string) int64 {
	if old == "" {
		return int64(len(s)) + 1
	}
	return int64(strings.Count(s, old))
}

func estimateReplace(ops []*ast.Term, _ int64) (int64, error) {
	s, ok1 := stringOp(ops, 0)
	old, ok2 := stringOp(ops, 1)
	repl, ok3 := stringOp(ops, 2)
	if !ok1 || !ok2 || !ok3 {
		return 0, nil
	}
	return satAdd(int64(len(s)), satMul(occurrences(s, old), int64(len(repl)))), nil
}

func estimateReplaceN(ops []*ast.Term, limit int64) (int64, error) {
	if len(ops) < 2 {
		return 0, nil
	}
	patterns, ok1 := ops[0].Value.(ast.Object)
	s, ok2 := stringOp(ops, 1)
	if !ok1 || !ok2 {
		return 0, nil
	}
	n := int64(len(s))
	_ = patterns.Iter(func(k, v *ast.Term) error {
		old, ok1 := k.Value.(ast.String)
		repl, ok2 := v.Value.(ast.String)
		if ok1 && ok2 {
			n = satAdd(n, satMul(occurrences(s, string(old)), int64(len(repl))))
		}
		if n > limit {
			return errStop
		}
		return nil
	})
	if n > limit {
		return math.MaxInt64, nil
	}
	return n, nil
}

func estimateSplit(ops []*ast.Term, _ int64) (int64, error) {
	s, ok1 := stringOp(ops, 0)
	sep, ok2 := stringOp(ops, 1)
	if !ok1 || !ok2 {
		return 0, nil
	}
	parts := occurrences(s, sep) + 1
	if len(ops) > 2 { // strings.split_n
		if n, ok := ops[2].Value.(ast.Number); ok {
			if k, ok := n.Int64(); ok && k >= 0 {
				parts = min(parts, k)
			}
		}
	}
	return satAdd(int64(len(s)), satMul(parts, termBytes)), nil
}

func estimateIndexOfN(ops []*ast.Term, _ int64) (int64, error) {
	s, ok1 := stringOp(ops, 0)
	sub, ok2 := stringOp(ops, 1)
	if !ok1 || !ok2 {
		return 0, nil
	}
	return satMul(occurrences(s, sub), termBytes), nil
}

// estimateFlatten counts the elements array.flatten produces: an array that
// holds one array many times flattens into all their copies.
func estimateFlatten(ops []*ast.Term, limit int64) (int64, error) {
	if len(ops) < 1 {
		return 0, nil
	}
	var n int64
	var walk func(v ast.Value)
	walk = func(v ast.Value) {
		arr, ok := v.(*ast.Array)
		if !ok {
			n = satAdd(n, 16)
			return
		}
		for i := 0; i < arr.Len() && n <= limit; i++ {
			walk(arr.Elem(i).Value)
		}
	}
	walk(ops[0].Value)
	if n > limit {
		return math.MaxInt64, nil
	}
	return n, nil
}

// estimateMarshal bounds json.marshal and, with options, pretty-printed
// JSON, where every value starts a line with the prefix and one indent per
// level.
func estimateMarshal(withOptions bool) estimator {
	return func(ops []*ast.Term, limit int64) (int64, error) {
		if len(ops) < 1 {
			return 0, nil
		}
		if !withOptions {
			return valueText(ops[0].Value, limit), nil
		}
		indent, prefix := int64(1), int64(0)
		if len(ops) > 1 {
			if opts, ok := ops[1].Value.(ast.Object); ok {
				if t := opts.Get(ast.InternedTerm("indent")); t != nil {
					if s, ok := t.Value.(ast.String); ok {
						indent = int64(len(s))
					}
				}
				if t := opts.Get(ast.InternedTerm("prefix")); t != nil {
					if s, ok := t.Value.(ast.String); ok {
						prefix = int64(len(s))
					}
				}
			}
		}
		return layoutText(ops[0].Value, indent, prefix, limit), nil
	}
}

// layoutText is valueText for output with one value per line, indented by
// depth (pretty JSON, YAML): each value, and each collection's closing
// bracket, takes a line with the prefix and its indentation; a string adds
// a line for each line break it holds (YAML writes multi-line strings as
// indented blocks).
func layoutText(v ast.Value, indent, prefix, limit int64) int64 {
	var n int64
	var walk func(v ast.Value, depth int64)
	walk = func(v ast.Value, depth int64) {
		line := satAdd(satAdd(prefix, satMul(depth+1, indent)), 1)
		n = satAdd(n, satAdd(line, 2))
		switch x := v.(type) {
		case ast.String:
			n = satAdd(n, escapedLen(string(x))+4)
			n = satAdd(n, satMul(int64(strings.Count(string(x), "\n")), line))
		case *ast.Array:
			n = satAdd(n, line+2)
			for i := 0; i < x.Len() && n <= limit; i++ {
				walk(x.Elem(i).Value, depth+1)
			}
		case ast.Set:
			n = satAdd(n, line+2)
			elements(x, func(t *ast.Term) bool {
				walk(t.Value, depth+1)
				return n <= limit
			})
		case ast.Object:
			n = satAdd(n, line+2)
			_ = x.Iter(func(k, val *ast.Term) error {
				n = satAdd(n, satAdd(valueText(k.Value, limit), 2))
				walk(val.Value, depth+1)
				if n > limit {
					return errStop
				}
				return nil
			})
		default:
			n = satAdd(n, valueText(v, limit))
		}
	}
	walk(v, 0)
	if n > limit {
		return math.MaxInt64
	}
	return n
}

func estimateYAML(ops []*ast.Term, limit int64) (int64, error) {
	if len(ops) < 1 {
		return 0, nil
	}
	// YAML indents by two spaces per level, after converting through JSON.
	return satAdd(valueText(ops[0].Value, limit), layoutText(ops[0].Value, 2, 2, limit)), nil
}

func estimateURLQueryObject(ops []*ast.Term, limit int64) (int64, error) {
	if len(ops) < 1 {
		return 0, nil
	}
	// Percent-encoding triples a byte at most.
	return satMul(valueText(ops[0].Value, limit), 3), nil
}

// estimateUnmarshal: a parsed document costs a term per token, and a token
// can be two bytes of text ("0,"): bound it by 64 bytes per byte of text.
func estimateUnmarshal(ops []*ast.Term, _ int64) (int64, error) {
	s, ok := stringOp(ops, 0)
	if !ok {
		return 0, nil
	}
	return satMul(int64(len(s)), 64), nil
}

// estimateGlob limits glob patterns, which OPA compiles and caches like
// regular expressions.
func estimateGlob(ops []*ast.Term, _ int64) (int64, error) {
	if p, ok := stringOp(ops, 0); ok && len(p) > MaxRegexBytes {
		return 0, fmt.Errorf("the pattern is %s, more than the %s a glob pattern may have in an ndp policy", FormatBytes(int64(len(p))), FormatBytes(MaxRegexBytes))
	}
	return 0, nil
}

// regexCall is a regex builtin call being checked: its pattern, compiled
// only when a bound needs counting matches.
type regexCall struct {
	pattern string
	groups  int64
	re      *regexp.Regexp
}

func (c *regexCall) compiled() *regexp.Regexp {
	if c.re == nil {
		c.re, _ = regexp.Compile(c.pattern) // checked already: it parses
	}
	return c.re
}

// regexResult bounds what a regex builtin allocates on a subject.
type regexResult func(c *regexCall, ops []*ast.Term, subject string, limit int64) int64

// estimateRegex checks the pattern (operand pat) and, when result is set,
// bounds the result on the subject (operand subj).
func estimateRegex(pat, subj int, result regexResult) estimator {
	return func(ops []*ast.Term, limit int64) (int64, error) {
		p, ok := stringOp(ops, pat)
		if !ok {
			return 0, nil
		}
		groups, err := checkPattern(p)
		if err != nil || groups < 0 || result == nil {
			return 0, err // groups < 0: it does not parse, the builtin says so
		}
		s, ok := stringOp(ops, subj)
		if !ok {
			return 0, nil
		}
		return result(&regexCall{pattern: p, groups: groups}, ops, s, limit), nil
	}
}

// matches bounds the matches a call finds: one per position at most (and
// at most want, if want >= 0); when that bound at perMatch bytes each is
// over the limit, the matches are counted, up to what the limit allows.
func (c *regexCall) matches(s string, want, perMatch, limit int64) int64 {
	bound := int64(len(s)) + 1
	if want >= 0 {
		bound = min(bound, want)
	}
	if satMul(bound, perMatch) <= limit {
		return bound
	}
	enough := limit/max(perMatch, 1) + 1
	return min(bound, int64(len(c.compiled().FindAllStringIndex(s, int(enough)))))
}

func wantedMatches(ops []*ast.Term, i int) int64 {
	if i < len(ops) {
		if n, ok := ops[i].Value.(ast.Number); ok {
			if k, ok := n.Int64(); ok && k >= 0 {
				return k
			}
		}
	}
	return -1
}

func regexSplitBytes(c *regexCall, _ []*ast.Term, s string, limit int64) int64 {
	return satAdd(int64(len(s)), satMul(c.matches(s, -1, termBytes, limit)+1, termBytes))
}

func regexFindBytes(c *regexCall, ops []*ast.Term, s string, limit int64) int64 {
	const per = termBytes + 16
	return satMul(c.matches(s, wantedMatches(ops, 2), per, limit), per)
}

func regexSubmatchBytes(c *regexCall, ops []*ast.Term, s string, limit int64) int64 {
	per := (c.groups + 2) * (termBytes + 16)
	return satMul(c.matches(s, wantedMatches(ops, 2), per, limit), per)
}

// regexReplaceBytes: OPA finds every match first, then writes each
// replacement, where $1 may insert up to the whole subject.
func regexReplaceBytes(c *regexCall, ops []*ast.Term, s string, limit int64) int64 {
	repl, ok := stringOp(ops, 2)
	if !ok {
		return 0
	}
	per := satAdd(16*(c.groups+1)+24+int64(len(repl)), satMul(int64(strings.Count(repl, "$")), int64(len(s))))
	return satAdd(int64(len(s)), satMul(c.matches(s, -1, per, limit), per))
}

// Patterns already checked, with their number of groups (-1: the pattern
// does not parse), so that a pattern used on every change is parsed once.
// Bounded: it is cleared when full.
type checkedPattern struct {
	groups int64
	err    error
}

var (
	checkedMu       sync.RWMutex
	checkedPatterns = map[string]checkedPattern{}
	checkedBytes    int
)

const maxCheckedBytes = 1 << 20

// checkPattern refuses a regular expression that is too long or compiles to
// too large a program, without compiling it: Go's parser keeps repetitions
// unexpanded, and the size is computed as its compiler would expand them.
// It returns the pattern's number of groups, -1 if it does not parse.
func checkPattern(p string) (int64, error) {
	if len(p) > MaxRegexBytes {
		return 0, fmt.Errorf("the pattern is %s, more than the %s a regular expression may have in an ndp policy", FormatBytes(int64(len(p))), FormatBytes(MaxRegexBytes))
	}
	checkedMu.RLock()
	c, ok := checkedPatterns[p]
	checkedMu.RUnlock()
	if ok {
		return c.groups, c.err
	}
	c.groups = -1
	if re, err := syntax.Parse(p, syntax.Perl); err == nil {
		c.groups = int64(re.MaxCap())
		if n := progInstructions(re); n > MaxRegexInstructions {
			c.err = fmt.Errorf("the pattern compiles to about %d instructions, more than the %d a regular expression may have in an ndp policy", n, MaxRegexInstructions)
		}
	}
	checkedMu.Lock()
	if checkedBytes+len(p) > maxCheckedBytes {
		checkedPatterns, checkedBytes = map[string]checkedPattern{}, 0
	}
	checkedPatterns[p] = c
	checkedBytes += len(p)
	checkedMu.Unlock()
	return c.groups, c.err
}

// progInstructions bounds the instructions of re's compiled program: its
// expression, and the few every program has (fail, match, the whole match's
// capture).
func progInstructions(re *syntax.Regexp) int64 { return satAdd(progSize(re), 4) }

// progSize estimates the instructions syntax.Compile emits for re's
// expression, as Go's parser does to enforce its own (much larger) limit.
func progSize(re *syntax.Regexp) int64 {
	var size int64
	switch re.Op {
	case syntax.OpLiteral:
		size = int64(len(re.Rune))
	case syntax.OpCapture, syntax.OpStar:
		size = 2 + progSize(re.Sub[0])
	case syntax.OpPlus, syntax.OpQuest:
		size = 1 + progSize(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			size = satAdd(size, progSize(sub))
		}
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			size = satAdd(size, progSize(sub))
		}
		size = satAdd(size, int64(len(re.Sub)))
	case syntax.OpRepeat:
		sub := progSize(re.Sub[0])
		if re.Max == -1 {
			size = satAdd(2, satMul(int64(max(re.Min, 1)), sub))
		} else {
			size = satAdd(satMul(int64(re.Max), sub), int64(re.Max-re.Min))
		}
	}
	return max(size, 1)
}
