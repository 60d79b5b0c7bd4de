package sandbox

import (
	"context"
	"math"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// The guards' estimates are upper bounds: a call they let through never
// produces more than they said, or the per-call limit would not hold.
func TestGuardEstimatesBoundResults(t *testing.T) {
	str := func(s string) *ast.Term { return ast.StringTerm(s) }
	nums := func(n int) *ast.Term {
		terms := make([]*ast.Term, n)
		for i := range terms {
			terms[i] = ast.IntNumberTerm(i * 7919)
		}
		return ast.ArrayTerm(terms...)
	}
	quoted := strings.Repeat("<&\"\\\x01é", 50)
	nested := ast.MustParseTerm(`{"a": [1, 2, {"b": "line\nline\nline", "c": [[[["deep"]]]]}], "d": {"e": null, "f": true, "g": 1.5}}`)
	for _, tc := range []struct {
		name string
		ops  []*ast.Term
	}{
		{"concat", []*ast.Term{str(", "), ast.ArrayTerm(str("a"), str(quoted), str(""))}},
		{"concat", []*ast.Term{str("--"), ast.SetTerm(str("a"), str("bb"), str("ccc"))}},
		{"sprintf", []*ast.Term{str("%s/%d/%v/%q/%x/%08.3f|%-20s|%*d"), ast.ArrayTerm(str(quoted), ast.IntNumberTerm(42), nested, str(quoted), str(quoted), ast.FloatNumberTerm(3.14159), str("x"), ast.IntNumberTerm(30), ast.IntNumberTerm(5))}},
		{"sprintf", []*ast.Term{str("%[1]s%[1]s%[1]s%[2]v"), ast.ArrayTerm(str(quoted), nested)}},
		{"sprintf", []*ast.Term{str("%v %v"), ast.ArrayTerm(ast.ArrayTerm(str(quoted), str(quoted)), ast.SetTerm(str(quoted)))}},
		{"replace", []*ast.Term{str("a.b.c.d"), str("."), str("---")}},
		{"replace", []*ast.Term{str("héllo"), str(""), str("<>")}},
		{"strings.replace_n", []*ast.Term{ast.ObjectTerm(ast.Item(str("a"), str("xyz")), ast.Item(str(""), str("!"))), str("banana")}},
		{"split", []*ast.Term{str("a,b,,c"), str(",")}},
		{"split", []*ast.Term{str("héllo"), str("")}},
		{"strings.split_n", []*ast.Term{str("a,b,c,d"), str(","), ast.IntNumberTerm(2)}},
		{"indexof_n", []*ast.Term{str("aaaa"), str("a")}},
		{"array.flatten", []*ast.Term{ast.ArrayTerm(nums(3), ast.ArrayTerm(nums(2), nums(4)), ast.IntNumberTerm(1))}},
		{"json.marshal", []*ast.Term{nested}},
		{"json.marshal", []*ast.Term{ast.ArrayTerm(str(quoted), str(quoted))}},
		{"json.marshal_with_options", []*ast.Term{nested, ast.MustParseTerm(`{"indent": "    ", "prefix": ">>"}`)}},
		{"json.marshal_with_options", []*ast.Term{nested, ast.MustParseTerm(`{"pretty": true}`)}},
		{"yaml.marshal", []*ast.Term{nested}},
		{"yaml.marshal", []*ast.Term{ast.ArrayTerm(str(quoted), str("multi\nline\nstring\n"))}},
		{"urlquery.encode_object", []*ast.Term{ast.MustParseTerm(`{"a": ["x y", "é&="], "b": "c"}`)}},
		{"regex.split", []*ast.Term{str("[,;]"), str("a,b;c,,d")}},
		{"regex.find_n", []*ast.Term{str("[a-z]+"), str("ab cd ef"), ast.IntNumberTerm(-1)}},
		{"regex.find_all_string_submatch_n", []*ast.Term{str("([a-z])([0-9])"), str("a1 b2 c3"), ast.IntNumberTerm(-1)}},
		{"regex.replace", []*ast.Term{str("abcabc"), str("(b)"), str("[$1$1]")}},
		{"regex.replace", []*ast.Term{str("abc"), str(""), str("--")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bound, err := guards[tc.name](tc.ops, math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			var got *ast.Term
			bctx := topdown.BuiltinContext{Context: context.Background(), Location: &ast.Location{}}
			err = topdown.GetBuiltin(tc.name)(bctx, append(tc.ops, ast.VarTerm("out")), func(r *ast.Term) error { got = r; return nil })
			if err != nil {
				t.Fatal(err)
			}
			size := resultBytes(got.Value)
			if tc.name == "array.flatten" { // elements are shared: pointer and hash
				size = int64(got.Value.(*ast.Array).Len()) * 16
			}
			if size > bound {
				t.Errorf("%s: the result takes %d bytes, more than the estimate %d", got, size, bound)
			}
		})
	}
}

// resultBytes is what a result takes by the guards' accounting: its text,
// and termBytes per element of a produced collection.
func resultBytes(v ast.Value) int64 {
	switch x := v.(type) {
	case ast.String:
		return int64(len(x))
	case *ast.Array:
		n := int64(0)
		for i := range x.Len() {
			n += termBytes
			if _, nested := x.Elem(i).Value.(*ast.Array); nested {
				n += resultBytes(x.Elem(i).Value)
			}
		}
		return n
	}
	return 0
}

// progSize must not underestimate the program Go compiles, or the
// instruction limit could be passed.
func TestRegexProgramEstimate(t *testing.T) {
	for _, p := range []string{
		`a`, `abc`, `a*b+c?`, `(a|b|c)+`, `[a-z]{3,7}`, `(?:ab){5}`, `(?:ab){2,}`, `x{0,5}`, `^(x+x+)+y$`,
		`(?i)hello world`, `(a(b(c(d)*)*)*)*`, `[a-z]{1000}[0-9]{1000}`, `(?:(?:a|b){10}){10}`, `\d+\.\d+\.\d+`,
		`^/etc/(containers|crio)/.*\.conf$`, `(?s).{0,100}`, `(?:a{2}){3}`, `a{5,}`, `(?:)`,
	} {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if est := progInstructions(re); est < int64(len(prog.Inst)) {
			t.Errorf("%s: estimated %d instructions, compiles to %d", p, est, len(prog.Inst))
		}
	}
	if _, err := checkPattern(strings.Repeat("[a-z]{1000}", 21)); err == nil {
		t.Error("a pattern of 21,000 instructions passes")
	}
	if _, err := checkPattern(strings.Repeat("a", MaxRegexBytes+1)); err == nil {
		t.Error("a pattern over MaxRegexBytes passes")
	}
	if groups, err := checkPattern(`^/etc/(containers|crio)/(.*)$`); err != nil || groups != 2 {
		t.Errorf("an ordinary pattern: %d groups, %v", groups, err)
	}
}

func TestScanFormat(t *testing.T) {
	for _, tc := range []struct {
		f       string
		verbs   int
		widths  int64
		indexed bool
	}{
		{"plain", 0, 0, false},
		{"100%%", 0, 0, false},
		{"%s-%d", 2, 0, false},
		{"%08.3f", 1, 11, false},
		{"%-20s|%*d", 2, 1000020, false},
		{"%[2]s %[1]s", 2, 0, true},
		{"%099999999999d", 1, 1000000, false},
	} {
		verbs, widths, indexed := scanFormat(tc.f)
		if verbs != tc.verbs || widths != tc.widths || indexed != tc.indexed {
			t.Errorf("scanFormat(%q) = %d, %d, %t; want %d, %d, %t", tc.f, verbs, widths, indexed, tc.verbs, tc.widths, tc.indexed)
		}
	}
}
