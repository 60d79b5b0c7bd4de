package registries

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
)

// The files the MCO's container-runtime-config controller writes into a
// pool's 99-<pool>-generated-registries MachineConfig
// (pkg/controller/container-runtime-config/helpers.go).
const (
	PolicyPath            = "/etc/containers/policy.json"
	SearchRegistriesPath  = "/etc/containers/registries.conf.d/01-image-searchRegistries.conf"
	pullFromMirrorDigests = sysregistriesv2.MirrorByDigestOnly
	pullFromMirrorTags    = sysregistriesv2.MirrorByTagOnly
)

// The MCO's patterns of an image-mirror source (a wildcard host allowed)
// and mirror, as openshift/api's CRDs state them.
var (
	mcoSourcePattern = regexp.MustCompile(`^\*(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+$|^((?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+)?(?::[0-9]+)?)(?:(?:/[a-z0-9]+(?:(?:(?:[._]|__|[-]*)[a-z0-9]+)+)?)+)?$`)
	mcoMirrorPattern = regexp.MustCompile(`^((?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+)?(?::[0-9]+)?)(?:(?:/[a-z0-9]+(?:(?:(?:[._]|__|[-]*)[a-z0-9]+)+)?)+)?$`)
)

// MCOInputs are what the MCO's registries rendering reads: the
// image-mirror objects and image.config.openshift.io cluster's
// spec.registrySources.
type MCOInputs struct {
	IDMS []configv1.ImageDigestMirrorSet
	ITMS []configv1.ImageTagMirrorSet
	ICSP []operatorv1alpha1.ImageContentSourcePolicy
	// Insecure, Blocked, Allowed and Search are
	// spec.registrySources.insecureRegistries, blockedRegistries,
	// allowedRegistries and containerRuntimeSearchRegistries.
	Insecure, Blocked, Allowed, Search []string
}

// MCOFile is one file of the generated registries MachineConfig.
type MCOFile struct {
	Path string
	Data []byte
}

// RenderMCO is what the MCO's container-runtime-config controller writes
// into a pool's generated registries MachineConfig, from the pool's
// template registries.conf and policy.json (baseConf, basePolicy):
//
//   - registries.conf, when any mirror, insecure or blocked registry is
//     set: the base with the mirror sets merged per source (the chains of
//     every object ordered together, ties by name), digest mirrors
//     (IDMS, ICSP) before tag mirrors (ITMS), each appended to the source's
//     existing [[registry]] entry (or a new one, by location, or by prefix
//     for a wildcard), blocked for NeverContactSource; insecure and blocked
//     scopes mark their entry and every entry (and, for insecure, every
//     mirror) inside them; a registry inside a mirrored scope without
//     mirrors of its own gets the scope's mirrors with its sub-path;
//   - policy.json, when blocked or allowed registries are set: rejected
//     by default and accepted for the allowed ones, or accepted by default
//     and rejected for the blocked ones, for the docker and atomic
//     transports (atomic without scopes of three or more segments);
//   - the search registries drop-in, when the search list is set.
//
// Not modelled: the release payload's repository (the MCO keeps it
// reachable when it is blocked and refuses blocking it without a mirror)
// and ClusterImagePolicies / ImagePolicies (signature requirements,
// registries.d, /etc/crio/policies).
func RenderMCO(baseConf, basePolicy []byte, in MCOInputs) ([]MCOFile, error) {
	if err := validateMCOScopes(in); err != nil {
		return nil, err
	}
	var out []MCOFile
	if in.Insecure != nil || in.Blocked != nil || len(in.IDMS)+len(in.ITMS)+len(in.ICSP) > 0 {
		if len(baseConf) == 0 {
			return nil, fmt.Errorf("the pool's template has no %s to add the mirrors to", ConfPath)
		}
		var conf sysregistriesv2.V2RegistriesConf
		if _, err := toml.Decode(string(baseConf), &conf); err != nil {
			return nil, fmt.Errorf("the pool's template %s: %w", ConfPath, err)
		}
		if err := editMCO(&conf, in); err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := toml.NewEncoder(&b).Encode(conf); err != nil {
			return nil, err
		}
		out = append(out, MCOFile{ConfPath, b.Bytes()})
	}
	if in.Blocked != nil || in.Allowed != nil {
		if len(basePolicy) == 0 {
			return nil, fmt.Errorf("the pool's template has no %s", PolicyPath)
		}
		data, err := policyMCO(basePolicy, in.Blocked, in.Allowed)
		if err != nil {
			return nil, err
		}
		out = append(out, MCOFile{PolicyPath, data})
	}
	if in.Search != nil {
		var b bytes.Buffer
		if err := toml.NewEncoder(&b).Encode(sysregistriesv2.V2RegistriesConf{UnqualifiedSearchRegistries: in.Search}); err != nil {
			return nil, err
		}
		out = append(out, MCOFile{SearchRegistriesPath, b.Bytes()})
	}
	return out, nil
}

// validRegistriesConfScope: a host or repository, or a wildcard host
// "*.example.com" and nothing else with a star.
func validRegistriesConfScope(s string) bool {
	switch {
	case s == "":
		return false
	case !strings.Contains(s, "*"):
		return true
	}
	return strings.HasPrefix(s, "*.") && !strings.ContainsAny(s[2:], "/@:*")
}

// validateMCOScopes refuses what the MCO's controller refuses (and then
// renders nothing): bad scopes, bad sources or mirrors, one source with
// two mirrorSourcePolicies, NeverContactSource with the source among its
// mirrors.
func validateMCOScopes(in MCOInputs) error {
	for _, l := range []struct {
		what   string
		scopes []string
	}{{"insecure", in.Insecure}, {"blocked", in.Blocked}, {"allowed", in.Allowed}} {
		for _, s := range l.scopes {
			if !validRegistriesConfScope(s) {
				return fmt.Errorf("image.config.openshift.io cluster: invalid entry for %s registries %q", l.what, s)
			}
		}
	}
	policies := map[string]configv1.MirrorSourcePolicy{}
	check := func(object, source string, mirrors []string, pol configv1.MirrorSourcePolicy) error {
		if !mcoSourcePattern.MatchString(source) {
			return fmt.Errorf("%s: invalid format for source %q", object, source)
		}
		if pol == "" {
			pol = configv1.AllowContactingSource
		}
		if p, ok := policies[source]; ok && p != pol {
			return fmt.Errorf("%s: conflicting mirrorSourcePolicy for source %q", object, source)
		}
		policies[source] = pol
		for _, m := range mirrors {
			if !mcoMirrorPattern.MatchString(m) {
				return fmt.Errorf("%s: invalid format for mirror %q", object, m)
			}
			if pol == configv1.NeverContactSource && m == source {
				return fmt.Errorf("%s: mirrorSourcePolicy NeverContactSource with the source %q among the mirrors", object, source)
			}
		}
		return nil
	}
	for _, o := range in.ICSP {
		for i, m := range o.Spec.RepositoryDigestMirrors {
			if err := check(fmt.Sprintf("ImageContentSourcePolicy %q spec.repositoryDigestMirrors[%d]", o.Name, i), m.Source, m.Mirrors, ""); err != nil {
				return err
			}
		}
	}
	for _, o := range in.IDMS {
		for i, m := range o.Spec.ImageDigestMirrors {
			if err := check(fmt.Sprintf("ImageDigestMirrorSet %q spec.imageDigestMirrors[%d]", o.Name, i), m.Source, mirrorStrings(m.Mirrors), m.MirrorSourcePolicy); err != nil {
				return err
			}
		}
	}
	for _, o := range in.ITMS {
		for i, m := range o.Spec.ImageTagMirrors {
			if err := check(fmt.Sprintf("ImageTagMirrorSet %q spec.imageTagMirrors[%d]", o.Name, i), m.Source, mirrorStrings(m.Mirrors), m.MirrorSourcePolicy); err != nil {
				return err
			}
		}
	}
	return nil
}

// mirrorChains collects, per source, the mirror lists of every set
// (mirror chains), and the sources never to contact. A set whose mirrors
// are all the source itself is no mirror set.
type mirrorChains struct {
	chains map[string][][]string
	never  map[string]bool
}

func (c *mirrorChains) add(source string, pol configv1.MirrorSourcePolicy, mirrors []string) {
	if !slices.ContainsFunc(mirrors, func(m string) bool { return m != source }) {
		return
	}
	if pol == configv1.NeverContactSource {
		c.never[source] = true
	}
	c.chains[source] = append(c.chains[source], slices.Clone(mirrors))
}

type mergedSet struct {
	source  string
	mirrors []string
	never   bool
}

// merged orders each source's mirrors so that every chain's order holds
// (each mirror before the next, the last before the source), ties broken
// by name and cycles at the smallest name not yet placed; the source
// itself is left out when it comes last. Sources by name.
func (c *mirrorChains) merged() []mergedSet {
	var out []mergedSet
	for _, source := range slices.Sorted(mapKeys(c.chains)) {
		g := newOrderGraph()
		for _, chain := range c.chains[source] {
			for i := 0; i+1 < len(chain); i++ {
				g.edge(chain[i], chain[i+1])
			}
			if !slices.Contains(chain, source) {
				g.edge(chain[len(chain)-1], source)
			}
		}
		order := g.order()
		if n := len(order); n > 0 && order[n-1] == source {
			order = order[:n-1]
		}
		out = append(out, mergedSet{source: source, mirrors: order, never: c.never[source]})
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// orderGraph is a precedence graph of names.
type orderGraph struct {
	succ  map[string]map[string]bool
	preds map[string]int
}

func newOrderGraph() *orderGraph {
	return &orderGraph{succ: map[string]map[string]bool{}, preds: map[string]int{}}
}

func (g *orderGraph) node(n string) {
	if g.succ[n] == nil {
		g.succ[n] = map[string]bool{}
		g.preds[n] += 0
	}
}

func (g *orderGraph) edge(from, to string) {
	g.node(from)
	g.node(to)
	if !g.succ[from][to] {
		g.succ[from][to] = true
		g.preds[to]++
	}
}

// order is a topological order: a queue started with the names without
// predecessors (by name); each placed name frees its successors, queued by
// name; an empty queue with names left (a cycle) takes the smallest
// name not yet placed.
func (g *orderGraph) order() []string {
	all := slices.Sorted(mapKeys(g.succ))
	preds := map[string]int{}
	for n, c := range g.preds {
		preds[n] = c
	}
	placed := map[string]bool{}
	var queue, out []string
	for _, n := range all {
		if preds[n] == 0 {
			queue = append(queue, n)
		}
	}
	next := 0
	for len(queue) > 0 || next < len(all) {
		var n string
		if len(queue) > 0 {
			n, queue = queue[0], queue[1:]
		} else {
			n = all[next]
			next++
			if placed[n] {
				continue
			}
		}
		placed[n] = true
		out = append(out, n)
		var freed []string
		for s := range g.succ[n] {
			preds[s]--
			if preds[s] == 0 && !placed[s] {
				freed = append(freed, s)
			}
		}
		sort.Strings(freed)
		queue = append(queue, freed...)
	}
	return out
}

// scopeWithin: sub is super, or a repository under it, or a host matching
// a wildcard super ("*.example.com").
func scopeWithin(sub, super string) bool {
	if sub == super {
		return true
	}
	if len(sub) > len(super) && strings.HasPrefix(sub, super) && sub[len(super)] == '/' {
		return true
	}
	if strings.HasPrefix(super, "*.") {
		host := sub
		if strings.Contains(sub, ":") {
			host = strings.Split(sub, ":")[0]
			return strings.HasSuffix(host, super[1:]) && !strings.Contains(host, "/")
		}
		return strings.HasSuffix(strings.Split(sub, "/")[0], super[1:])
	}
	return false
}

func registryScope(r *sysregistriesv2.Registry) string {
	if r.Prefix != "" {
		return r.Prefix
	}
	return r.Location
}

// editMCO applies the mirror sets and the insecure and blocked scopes to
// conf (see RenderMCO).
func editMCO(conf *sysregistriesv2.V2RegistriesConf, in MCOInputs) error {
	entry := func(scope string) *sysregistriesv2.Registry {
		for i := range conf.Registries {
			if registryScope(&conf.Registries[i]) == scope {
				return &conf.Registries[i]
			}
		}
		r := sysregistriesv2.Registry{}
		if strings.HasPrefix(scope, "*.") {
			r.Prefix = scope
		} else {
			r.Location = scope
		}
		conf.Registries = append(conf.Registries, r)
		return &conf.Registries[len(conf.Registries)-1]
	}
	digests := &mirrorChains{chains: map[string][][]string{}, never: map[string]bool{}}
	for _, o := range in.IDMS {
		for _, m := range o.Spec.ImageDigestMirrors {
			digests.add(m.Source, m.MirrorSourcePolicy, mirrorStrings(m.Mirrors))
		}
	}
	for _, o := range in.ICSP {
		for _, m := range o.Spec.RepositoryDigestMirrors {
			digests.add(m.Source, "", m.Mirrors)
		}
	}
	tags := &mirrorChains{chains: map[string][][]string{}, never: map[string]bool{}}
	for _, o := range in.ITMS {
		for _, m := range o.Spec.ImageTagMirrors {
			tags.add(m.Source, m.MirrorSourcePolicy, mirrorStrings(m.Mirrors))
		}
	}
	digestSets, tagSets := digests.merged(), tags.merged()
	apply := func(sets []mergedSet, pull string) {
		for _, s := range sets {
			r := entry(s.source)
			if s.never {
				r.Blocked = true
			}
			for _, m := range s.mirrors {
				r.Mirrors = append(r.Mirrors, sysregistriesv2.Endpoint{Location: m, PullFromMirror: pull})
			}
		}
	}
	apply(digestSets, pullFromMirrorDigests)
	apply(tagSets, pullFromMirrorTags)
	for _, s := range in.Blocked {
		entry(s)
	}
	for _, s := range in.Insecure {
		entry(s).Insecure = true
		for i := range conf.Registries {
			r := &conf.Registries[i]
			if scopeWithin(registryScope(r), s) {
				r.Insecure = true
			}
			for j := range r.Mirrors {
				if scopeWithin(r.Mirrors[j].Location, s) {
					r.Mirrors[j].Insecure = true
				}
			}
		}
	}
	for _, s := range in.Blocked {
		entry(s).Blocked = true
		for i := range conf.Registries {
			if scopeWithin(registryScope(&conf.Registries[i]), s) {
				conf.Registries[i].Blocked = true
			}
		}
	}
	// A registry inside a mirrored scope, without mirrors of its own,
	// would not use the scope's: it gets them, with its sub-path.
	for _, s := range append(digestSets, tagSets...) {
		mirrored := entry(s.source)
		scope := registryScope(mirrored)
		mirrors := slices.Clone(mirrored.Mirrors)
		for i := range conf.Registries {
			r := &conf.Registries[i]
			sub := registryScope(r)
			if sub == scope || !scopeWithin(sub, scope) || len(r.Mirrors) > 0 {
				continue
			}
			if strings.HasPrefix(scope, "*.") || !strings.HasPrefix(sub, scope) {
				return fmt.Errorf("registries.conf: cannot carry the mirrors of %q over to %q", scope, sub)
			}
			rest := sub[len(scope):]
			for _, m := range mirrors {
				m.Location += rest
				r.Mirrors = append(r.Mirrors, m)
			}
		}
	}
	return nil
}

// policyMCO edits the template's policy.json for the blocked and allowed
// registries. The MCO encodes containers/image's signature.Policy; this
// keeps the document's own keys (the content is what the MCO writes; the
// key order may differ).
func policyMCO(base []byte, blocked, allowed []string) ([]byte, error) {
	if len(blocked) > 0 && len(allowed) > 0 {
		return nil, fmt.Errorf("image.config.openshift.io cluster: only one of allowedRegistries or blockedRegistries may be set")
	}
	var doc map[string]any
	if err := json.Unmarshal(base, &doc); err != nil {
		return nil, fmt.Errorf("the pool's template %s: %w", PolicyPath, err)
	}
	scopes := map[string]any{}
	reject := []any{map[string]any{"type": "reject"}}
	accept := []any{map[string]any{"type": "insecureAcceptAnything"}}
	if len(allowed) > 0 {
		doc["default"] = reject
		for _, r := range allowed {
			scopes[r] = accept
		}
	}
	if len(blocked) > 0 {
		doc["default"] = accept
		for _, r := range blocked {
			scopes[r] = reject
		}
	}
	if len(scopes) > 0 {
		transports, _ := doc["transports"].(map[string]any)
		if transports == nil {
			transports = map[string]any{}
		}
		transports["docker"] = scopes
		atomic := map[string]any{}
		for r, v := range scopes {
			if strings.Count(r, "/") < 3 {
				atomic[r] = v
			}
		}
		transports["atomic"] = atomic
		doc["transports"] = transports
	}
	return json.MarshalIndent(doc, "", "  ")
}
