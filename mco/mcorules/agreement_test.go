package mcorules_test

// The acceptance test "Agreement with the MCO's own code": mcorules.Decide
// (what `ndp plan --mco` calls) against mco-decide, the MCO daemon's own
// decision code (../shared/mco-ref), on the real rendered configs and
// thousands of seeded mutations of them (mutate_test.go).
//
// Running mco-decide costs ~0.15 s a case, so `make mco-agreement` (go test
// -run TestMCOAgreement -update) runs every case live and records the
// verdicts with a digest of the exact input bytes in
// testdata/agreement/recording.jsonl.gz; plain `go test` regenerates every
// case, checks its digest against the recording (a changed generator fails:
// re-record), compares Decide with the recorded verdict on all cases and
// re-runs a random sample live. It also counts how many cases ndp's own
// planner (default policies plus the policy `ndp import
// machineconfiguration` makes of the case's MachineConfiguration) already
// agrees on: the "before" figure of docs/performance.md.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcoimport"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
)

var (
	update     = flag.Bool("update", false, "run every agreement case live through mco-decide and rewrite the recording")
	liveSample = flag.Int("agreement.live", 100, "agreement cases re-run live through mco-decide (a random sample)")
	sampleSeed = flag.Uint64("agreement.seed", 0, "seed of the live sample (0: from the clock; the log names it)")
	workers    = flag.Int("agreement.workers", 0, "cases run at once (0: GOMAXPROCS)")
	resume     = flag.String("agreement.resume", "", "with -update: a file of verdicts by input digest, read first and appended to, so an interrupted recording resumes")
	withBefore = flag.Bool("agreement.before", false, "also count the cases ndp's own planner (defaults + imported MachineConfiguration) agrees on (about 7 ms a case more)")
)

// agreementCases is how many cases the generator makes (the recording holds
// as many).
const agreementCases = 10400

const recordingFile = "testdata/agreement/recording.jsonl.gz"

func newDigest() hash.Hash { return sha256.New() }

// verdict is what one side decides, in the MCO's terms.
type verdict struct {
	// Invalid: the tool refused the input (exit 2), with its message.
	Invalid string `json:"x,omitempty"`
	// Refused: not reconcilable.
	Refused bool `json:"r,omitempty"`
	// Actions as "Type[ service]", sorted, duplicates kept (a multiset:
	// the MCO orders different files' actions at random).
	Actions []string `json:"a,omitempty"`
	Drain   bool     `json:"d,omitempty"`
	Reboot  bool     `json:"b,omitempty"`
	// Error: the tool decided but reported an error (the drain check).
	Error string `json:"e,omitempty"`
}

func (v verdict) String() string {
	switch {
	case v.Invalid != "":
		return "invalid input: " + v.Invalid
	case v.Refused:
		return "refused"
	}
	s := fmt.Sprintf("[%s] drain=%t reboot=%t", strings.Join(v.Actions, ", "), v.Drain, v.Reboot)
	if v.Error != "" {
		s += " error: " + v.Error
	}
	return s
}

func actionSet(l []string) []string {
	s := slices.Clone(l)
	sort.Strings(s)
	return slices.Compact(s)
}

// agrees: the same refusal, action set, drain and reboot.
func (v verdict) agrees(w verdict) bool {
	if (v.Invalid != "") != (w.Invalid != "") {
		return false
	}
	if v.Invalid != "" || v.Refused || w.Refused {
		return v.Refused == w.Refused
	}
	return slices.Equal(actionSet(v.Actions), actionSet(w.Actions)) && v.Drain == w.Drain && v.Reboot == w.Reboot
}

func (v verdict) sameMultiset(w verdict) bool { return slices.Equal(v.Actions, w.Actions) }

type recorded struct {
	Index   int     `json:"i"`
	Class   string  `json:"c"`
	Digest  string  `json:"h"`
	Verdict verdict `json:"v"`
}

type recordingHeader struct {
	Generator string `json:"generator"`
	Seed      int    `json:"seed"`
	Cases     int    `json:"cases"`
	Tool      string `json:"tool"`
	Recorded  string `json:"recorded"`
	Took      string `json:"took"`
}

// mcoDecide is the reference tool: $NDP_MCO_DECIDE, else mco-decide in
// the MCO reference (testkit.RequireMCORef: t skips without it, or fails
// with NDP_REQUIRE_MCO_REF=1).
func mcoDecide(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("NDP_MCO_DECIDE"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	return testkit.RequireMCORef(t, "mco-decide")
}

// liveTool is mcoDecide for a test that also judges without it (by its
// recording, or by mcorules.Decide alone): its subtest "mco-decide" finds
// the tool, skips, or fails with NDP_REQUIRE_MCO_REF=1, and the test goes
// on; "" when the tool is absent.
func liveTool(t *testing.T) (tool string) {
	t.Helper()
	t.Run("mco-decide", func(t *testing.T) { tool = mcoDecide(t) })
	return tool
}

// toolOutput is mco-decide's answer with the MCO commit it was built from,
// which the recording keeps.
type toolOutput struct {
	testkit.MCODecision
	MCOCommit string `json:"mcoCommit"`
}

// runTool writes the case's bytes to dir and runs mco-decide on them.
func runTool(tool, dir string, c *agreementCase) (verdict, string, error) {
	old, nw, mcf := filepath.Join(dir, "old.json"), filepath.Join(dir, "new.json"), filepath.Join(dir, "mc.json")
	for _, f := range []struct {
		p string
		b []byte
	}{{old, c.Old}, {nw, c.New}, {mcf, c.MC}} {
		if f.b == nil {
			continue
		}
		if err := os.WriteFile(f.p, f.b, 0o600); err != nil {
			return verdict{}, "", err
		}
	}
	args := []string{"--from", old, "--to", nw}
	if c.MC != nil {
		args = append(args, "--machineconfiguration", mcf)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(tool, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 {
		return verdict{Invalid: firstLine(stderr.String())}, "", nil
	}
	if err != nil {
		return verdict{}, "", fmt.Errorf("mco-decide: %v: %s", err, stderr.String())
	}
	var out toolOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return verdict{}, "", fmt.Errorf("mco-decide output: %v: %s", err, stdout.String())
	}
	if !out.Reconcilable {
		return verdict{Refused: true}, out.MCOCommit, nil
	}
	v := verdict{Drain: out.Drain, Reboot: out.Reboot, Error: out.Error}
	for _, a := range out.Actions {
		v.Actions = append(v.Actions, strings.TrimSpace(a.Type+" "+a.Service))
	}
	sort.Strings(v.Actions)
	return v, out.MCOCommit, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// machineConfiguration decodes a case's MachineConfiguration (nil: none).
func machineConfiguration(b []byte) (*operatorv1.MachineConfiguration, error) {
	if b == nil {
		return nil, nil
	}
	var m operatorv1.MachineConfiguration
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// parsed is a case as ndp reads it.
type parsed struct {
	from, to *machineconfig.Config
	mc       *operatorv1.MachineConfiguration
	err      error
}

// oldConfigs caches parsed OLD configs: most cases share an unchanged base
// as OLD. Decide and the planner only read them.
var oldConfigs sync.Map // sha256 of the bytes → *machineconfig.Config

func parseCase(c *agreementCase) parsed {
	var p parsed
	key := sha256.Sum256(c.Old)
	if cfg, ok := oldConfigs.Load(key); ok {
		p.from = cfg.(*machineconfig.Config)
	} else if p.from, p.err = machineconfig.Parse("old.json", c.Old); p.err != nil {
		return p
	} else {
		oldConfigs.Store(key, p.from)
	}
	if p.to, p.err = machineconfig.Parse("new.json", c.New); p.err != nil {
		return p
	}
	p.mc, p.err = machineConfiguration(c.MC)
	return p
}

// decideNDP is mcorules.Decide's verdict.
func decideNDP(p parsed) verdict {
	if p.err != nil {
		return verdict{Invalid: p.err.Error()}
	}
	// As `ndp plan --mco --machineconfiguration` asks it.
	in, _ := mcorules.For(p.from, p.to, p.mc, false)
	d, err := mcorules.Decide(in)
	if err != nil {
		return verdict{Invalid: err.Error()}
	}
	if len(d.Refused) > 0 {
		return verdict{Refused: true}
	}
	v := verdict{Drain: d.Drain, Reboot: d.Reboot}
	for _, a := range d.Actions {
		v.Actions = append(v.Actions, strings.TrimSpace(string(a.Type)+" "+a.Service))
	}
	sort.Strings(v.Actions)
	return v
}

// The "before" side: ndp's own planner, default policy plus the imported
// MachineConfiguration, in the MCO's terms.

type beforePlanners struct {
	mu sync.Mutex
	m  map[string]*plannerOnce
}

type plannerOnce struct {
	once sync.Once
	p    *planner.Planner
	err  error
}

func (b *beforePlanners) get(mcBytes []byte) (*planner.Planner, error) {
	key := string(mcBytes)
	b.mu.Lock()
	po := b.m[key]
	if po == nil {
		po = &plannerOnce{}
		b.m[key] = po
	}
	b.mu.Unlock()
	po.once.Do(func() {
		pols := []policy.Policy{policy.DefaultPolicy()}
		if mcBytes != nil {
			src, _, err := mcoimport.Read("machineconfiguration.json", mcBytes)
			if err != nil {
				po.err = err
				return
			}
			res, err := mcoimport.Convert(src, mcoimport.Options{})
			if err != nil {
				po.err = err
				return
			}
			if res.Policy != nil {
				pols = append(pols, policy.FromAPI("", res.Policy, 0, 0))
			}
		}
		po.p, po.err = planner.New(context.Background(), pols, engine.Options{})
	})
	return po.p, po.err
}

// mcoTerms puts a verdict in the terms both planners share: Drain as the
// flag only, Special as the CRI-O reload it runs, None only when alone;
// as a set.
func mcoTerms(v verdict) verdict {
	if v.Invalid != "" || v.Refused {
		return verdict{Invalid: v.Invalid, Refused: v.Refused}
	}
	var acts []string
	for _, a := range v.Actions {
		switch a {
		case "Drain", "None":
			continue
		case "Special":
			a = "Reload crio.service"
		}
		acts = append(acts, a)
	}
	return verdict{Actions: actionSet(acts), Drain: v.Drain, Reboot: v.Reboot}
}

func beforeVerdict(ps *beforePlanners, c *agreementCase, p parsed) verdict {
	if p.err != nil {
		return verdict{Invalid: p.err.Error()}
	}
	pl, err := ps.get(c.MC)
	if err != nil {
		return verdict{Invalid: "import: " + err.Error()}
	}
	plan, err := pl.Plan(context.Background(), planner.Request{From: p.from, To: p.to})
	if err != nil {
		return verdict{Invalid: "plan: " + err.Error()}
	}
	if len(plan.Unreconcilable) > 0 {
		return verdict{Refused: true}
	}
	v := verdict{Drain: plan.Drain, Reboot: plan.Reboot}
	for _, a := range plan.Actions {
		v.Actions = append(v.Actions, planner.FormatActions([]policy.Action{a}))
	}
	return mcoTerms(v)
}

func readRecording() (recordingHeader, map[int]recorded, error) {
	var h recordingHeader
	f, err := os.Open(recordingFile)
	if err != nil {
		return h, nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return h, nil, err
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	if !sc.Scan() {
		return h, nil, fmt.Errorf("%s: empty", recordingFile)
	}
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		return h, nil, fmt.Errorf("%s: header: %w", recordingFile, err)
	}
	m := map[int]recorded{}
	for line := 2; sc.Scan(); line++ {
		var r recorded
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return h, nil, fmt.Errorf("%s: line %d: %w", recordingFile, line, err)
		}
		m[r.Index] = r
	}
	return h, m, sc.Err()
}

func writeRecording(h recordingHeader, recs []recorded) error {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return err
	}
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(recordingFile, buf.Bytes(), 0o644)
}

// outcome of one case.
type outcome struct {
	class, digest  string
	tool           verdict // recorded, or live with -update
	haveTool       bool
	after, before  verdict
	live           *verdict // the live re-run, when sampled
	desc           []string
	base           string
	digestMismatch bool
	policy         bool // the case has a MachineConfiguration
}

// resumed is one line of the -agreement.resume file.
type resumed struct {
	Digest  string  `json:"h"`
	Verdict verdict `json:"v"`
	Commit  string  `json:"mco"`
}

var resumedCommit string

func readResume(file string) (map[string]verdict, error) {
	m := map[string]verdict{}
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var r resumed
		if json.Unmarshal(line, &r) == nil && r.Digest != "" {
			m[r.Digest] = r.Verdict
			resumedCommit = r.Commit
		}
	}
	return m, nil
}

// safeGenerate is generateCase with a generator bug as an error.
func safeGenerate(i int, bs []*base) (c *agreementCase, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("case %d: the generator panicked: %v", i, r)
		}
	}()
	return generateCase(i, bs, -1, nil), nil
}

func TestMCOAgreement(t *testing.T) {
	start := time.Now()
	bs, err := loadBases()
	if err != nil {
		t.Fatalf("the real configs: %v", err)
	}
	tool := liveTool(t)
	if *update && tool == "" {
		t.Fatal("-update needs mco-decide (../shared/mco-ref/mco-decide, or NDP_MCO_DECIDE)")
	}
	var header recordingHeader
	var rec map[int]recorded
	if !*update {
		if header, rec, err = readRecording(); err != nil {
			t.Fatalf("the recording: %v (record it: make mco-agreement)", err)
		}
		if header.Cases != agreementCases || header.Seed != generatorSeed {
			t.Fatalf("the recording holds %d cases of seed %d, the generator makes %d of seed %d: re-record (make mco-agreement)",
				header.Cases, header.Seed, agreementCases, generatorSeed)
		}
	}
	sample := map[int]bool{}
	if tool != "" && !*update {
		seed := *sampleSeed
		if seed == 0 {
			seed = uint64(time.Now().UnixNano())
		}
		t.Logf("live sample: %d cases, -agreement.seed=%d", *liveSample, seed)
		r := rand.New(rand.NewPCG(seed, 0))
		for len(sample) < min(*liveSample, agreementCases) {
			sample[r.IntN(agreementCases)] = true
		}
	} else if tool == "" {
		t.Logf("mco-decide not found (../shared/mco-ref/mco-decide or NDP_MCO_DECIDE): the live re-run is skipped, the recording alone is the judge")
	}

	// The cases allocate a few hundred KB each and keep little: collect
	// less often.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	planners := &beforePlanners{m: map[string]*plannerOnce{}}
	outcomes := make([]outcome, agreementCases)
	var next atomic.Int64
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var errs []string
	var mcoCommit atomic.Value
	nworkers := runtime.GOMAXPROCS(0)
	if *workers > 0 {
		nworkers = *workers
	}
	done := map[string]verdict{}
	var resumeFile *os.File
	if *update && *resume != "" {
		if done, err = readResume(*resume); err != nil {
			t.Fatal(err)
		}
		if resumeFile, err = os.OpenFile(*resume, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err != nil {
			t.Fatal(err)
		}
		defer resumeFile.Close()
		t.Logf("resuming: %d verdicts in %s", len(done), *resume)
	}
	for range nworkers {
		wg.Go(func() {
			dir := t.TempDir()
			for {
				i := int(next.Add(1) - 1)
				if i >= agreementCases {
					return
				}
				c, err := safeGenerate(i, bs)
				if err != nil {
					errMu.Lock()
					errs = append(errs, err.Error())
					errMu.Unlock()
					continue
				}
				o := outcome{class: c.Class, digest: c.Digest(), desc: c.Desc, base: c.Base, policy: c.MC != nil}
				if v, ok := done[o.digest]; *update && ok {
					o.tool, o.haveTool = v, true
				} else if *update {
					v, commit, err := runTool(tool, dir, c)
					if err != nil {
						errMu.Lock()
						errs = append(errs, fmt.Sprintf("case %d: %v", i, err))
						errMu.Unlock()
						continue
					}
					mcoCommit.Store(commit)
					o.tool, o.haveTool = v, true
					if resumeFile != nil {
						line, _ := json.Marshal(resumed{Digest: o.digest, Verdict: v, Commit: commit})
						errMu.Lock()
						_, _ = resumeFile.Write(append(line, '\n'))
						errMu.Unlock()
					}
				} else if r, ok := rec[i]; ok {
					o.tool, o.haveTool = r.Verdict, true
					o.digestMismatch = r.Digest != o.digest
				} else {
					o.digestMismatch = true
				}
				if sample[i] && !o.digestMismatch {
					v, _, err := runTool(tool, dir, c)
					if err != nil {
						errMu.Lock()
						errs = append(errs, fmt.Sprintf("case %d: %v", i, err))
						errMu.Unlock()
					} else {
						o.live = &v
					}
				}
				p := parseCase(c)
				o.after = decideNDP(p)
				if *withBefore {
					o.before = beforeVerdict(planners, c, p)
				}
				outcomes[i] = o
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d cases failed: %s", len(errs), strings.Join(errs[:min(5, len(errs))], "; "))
	}
	elapsed := time.Since(start)

	if *update {
		recs := make([]recorded, agreementCases)
		for i, o := range outcomes {
			recs[i] = recorded{Index: i, Class: o.class, Digest: o.digest, Verdict: o.tool}
		}
		commit, _ := mcoCommit.Load().(string)
		if commit == "" {
			commit = resumedCommit
		}
		h := recordingHeader{Generator: "mco/mcorules/mutate_test.go", Seed: generatorSeed, Cases: agreementCases, Tool: "mco-decide, MCO " + commit,
			Recorded: time.Now().UTC().Format(time.RFC3339), Took: elapsed.Round(time.Second).String()}
		if err := writeRecording(h, recs); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %d cases live through mco-decide in %s (%d workers, %d verdicts resumed)", agreementCases, elapsed.Round(time.Second), nworkers, len(done))
	}

	// The recording is the generator's: every input digest must match.
	var mismatched []int
	for i, o := range outcomes {
		if o.digestMismatch {
			mismatched = append(mismatched, i)
		}
	}
	if len(mismatched) > 0 {
		t.Fatalf("%d of %d cases are not the recorded inputs (first: case %d, class %s): the generator changed; re-record with make mco-agreement",
			len(mismatched), agreementCases, mismatched[0], outcomes[mismatched[0]].class)
	}

	// The live sample proves the recording.
	liveRuns, liveBad := 0, 0
	for i, o := range outcomes {
		if o.live == nil {
			continue
		}
		liveRuns++
		if !o.live.agrees(o.tool) || !o.live.sameMultiset(o.tool) || o.live.Drain != o.tool.Drain || o.live.Error != o.tool.Error {
			liveBad++
			t.Errorf("case %d (%s): mco-decide now says %s, the recording %s", i, o.class, o.live, o.tool)
		}
	}
	if liveRuns > 0 {
		t.Logf("live: %d sampled cases re-run through mco-decide, %d differ from the recording", liveRuns, liveBad)
	}

	// Per class: cases, after (mcorules) and before (ndp's planner).
	type row struct{ cases, after, multiset, before, refused int }
	rows := map[string]*row{}
	var total row
	examples := map[string][]string{}
	beforeExamples := map[string][]string{}
	for i, o := range outcomes {
		r := rows[o.class]
		if r == nil {
			r = &row{}
			rows[o.class] = r
		}
		r.cases++
		total.cases++
		if o.tool.Refused {
			r.refused++
			total.refused++
		}
		if !*withBefore {
		} else if mcoTerms(o.tool).agrees(o.before) {
			r.before++
			total.before++
		} else if len(beforeExamples[o.class]) < 2 {
			beforeExamples[o.class] = append(beforeExamples[o.class], fmt.Sprintf("case %d (%s; %s): MCO %s, ndp's planner %s",
				i, o.base, strings.Join(o.desc, "; "), mcoTerms(o.tool), o.before))
		}
		if o.after.agrees(o.tool) {
			r.after++
			total.after++
			if !o.after.sameMultiset(o.tool) {
				r.multiset++
				total.multiset++
			}
		} else if len(examples[o.class]) < 3 {
			examples[o.class] = append(examples[o.class], fmt.Sprintf("case %d (%s; %s; policy %t): MCO %s, mcorules %s",
				i, o.base, strings.Join(o.desc, "; "), o.policy, o.tool, o.after))
		}
	}
	names := make([]string, 0, len(rows))
	for n := range rows {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %6s %8s %8s %9s %8s\n", "class", "cases", "refused", "after", "multiset", "before")
	before := func(n int) string {
		if !*withBefore {
			return "-" // -agreement.before
		}
		return fmt.Sprint(n)
	}
	for _, n := range names {
		r := rows[n]
		fmt.Fprintf(&b, "%-24s %6d %8d %8d %9d %8s\n", n, r.cases, r.refused, r.after, r.multiset, before(r.before))
	}
	fmt.Fprintf(&b, "%-24s %6d %8d %8d %9d %8s\n", "total", total.cases, total.refused, total.after, total.multiset, before(total.before))
	t.Logf("agreement with mco-decide (after: mcorules.Decide, same refusal, action set, drain, reboot; multiset: of those, "+
		"action multisets that differ; before: ndp's planner with the imported MachineConfiguration), %s:\n%s", elapsed.Round(time.Millisecond), b.String())
	if *withBefore {
		t.Logf("before: ndp's planner agrees on %d of %d cases (%.1f%%)", total.before, total.cases, 100*float64(total.before)/float64(total.cases))
	}
	for _, n := range names {
		for _, e := range beforeExamples[n] {
			t.Logf("before, %s: %s", n, e)
		}
	}
	t.Logf("after: mcorules.Decide agrees on %d of %d cases (%.1f%%); %d agreeing cases differ as multisets",
		total.after, total.cases, 100*float64(total.after)/float64(total.cases), total.multiset)
	for _, n := range names {
		for _, e := range examples[n] {
			t.Errorf("%s: %s", n, e)
		}
	}
}

// The comparison itself: what counts as agreement and what as a multiset
// difference.
func TestVerdictAgreement(t *testing.T) {
	reload := verdict{Actions: []string{"Reload crio.service", "Restart kubelet.service"}}
	for _, tc := range []struct {
		name          string
		a, b          verdict
		agree, sameMS bool
	}{
		{"equal", reload, reload, true, true},
		{"duplicates: the same set, another multiset", reload,
			verdict{Actions: []string{"Reload crio.service", "Reload crio.service", "Restart kubelet.service"}}, true, false},
		{"another action", reload, verdict{Actions: []string{"Reload crio.service"}}, false, false},
		{"drain", reload, verdict{Actions: reload.Actions, Drain: true}, false, true},
		{"reboot", verdict{Actions: []string{"Reboot"}, Drain: true}, verdict{Actions: []string{"Reboot"}, Drain: true, Reboot: true}, false, true},
		{"refused both, whatever else", verdict{Refused: true}, verdict{Refused: true, Actions: []string{"None"}}, true, false},
		{"refused one", verdict{Refused: true}, verdict{Actions: []string{"None"}}, false, false},
		{"invalid one", verdict{Invalid: "bad"}, verdict{Actions: []string{"None"}}, false, false},
	} {
		if got := tc.a.agrees(tc.b); got != tc.agree {
			t.Errorf("%s: agrees %t, want %t", tc.name, got, tc.agree)
		}
		if got := tc.b.agrees(tc.a); got != tc.agree {
			t.Errorf("%s (swapped): agrees %t, want %t", tc.name, got, tc.agree)
		}
		if got := tc.a.sameMultiset(tc.b); got != tc.sameMS {
			t.Errorf("%s: same multiset %t, want %t", tc.name, got, tc.sameMS)
		}
	}
	// mcoTerms: Drain as the flag, Special as the reload it runs, None only alone.
	got := mcoTerms(verdict{Actions: []string{"Drain", "None", "Special", "Special"}, Drain: true})
	if want := (verdict{Actions: []string{"Reload crio.service"}, Drain: true}); !got.agrees(want) || !got.sameMultiset(want) {
		t.Errorf("mcoTerms: %s", got)
	}
}
