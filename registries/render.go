package registries

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
)

// The patterns of an image-mirror source (a wildcard host allowed) and
// mirror, as openshift/api's CRDs state them and the MCO's
// container-runtime-config controller checks them (ICSPs have no CRD
// pattern, the controller checks theirs alike).
var (
	sourcePattern = regexp.MustCompile(`^\*(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+$|^((?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+)?(?::[0-9]+)?)(?:(?:/[a-z0-9]+(?:(?:(?:[._]|__|[-]*)[a-z0-9]+)+)?)+)?$`)
	mirrorPattern = regexp.MustCompile(`^((?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+)?(?::[0-9]+)?)(?:(?:/[a-z0-9]+(?:(?:(?:[._]|__|[-]*)[a-z0-9]+)+)?)+)?$`)
)

// Inputs are what registries.conf is rendered from: the image-mirror
// objects and image.config.openshift.io cluster's spec.registrySources
// (the executor has no image config: only the objects).
type Inputs struct {
	IDMS []configv1.ImageDigestMirrorSet
	ITMS []configv1.ImageTagMirrorSet
	ICSP []operatorv1alpha1.ImageContentSourcePolicy
	// Insecure, Blocked, Allowed and Search are
	// spec.registrySources.insecureRegistries, blockedRegistries,
	// allowedRegistries and containerRuntimeSearchRegistries.
	Insecure, Blocked, Allowed, Search []string
}

// SetSources sets the registry sources of image.config cluster's spec.
func (in *Inputs) SetSources(spec *configv1.ImageSpec) {
	rs := spec.RegistrySources
	in.Insecure, in.Blocked, in.Allowed, in.Search = rs.InsecureRegistries, rs.BlockedRegistries, rs.AllowedRegistries, rs.ContainerRuntimeSearchRegistries
}

// InvalidError lists every image-mirror entry and registry source that
// cannot be rendered, each naming its object and field: nothing is
// rendered.
type InvalidError struct{ Errs []error }

func (e *InvalidError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap gives the errors to errors.Is and errors.As.
func (e *InvalidError) Unwrap() []error { return e.Errs }

// mirrorEntry is one source of an image-mirror object.
type mirrorEntry struct {
	// field names it: `ImageDigestMirrorSet "x" spec.imageDigestMirrors[0]`.
	field   string
	source  string
	mirrors []string
	// policy is "" for an ICSP, which has no mirrorSourcePolicy.
	policy configv1.MirrorSourcePolicy
	pull   string
}

// entries are the objects' sources in the order the MCO's controller
// checks them (ICSPs, IDMSs, ITMSs; objects as listed): the first of two
// entries in conflict is the one kept in an error's message.
func entries(in Inputs) []mirrorEntry {
	var out []mirrorEntry
	for _, o := range in.ICSP {
		for i, m := range o.Spec.RepositoryDigestMirrors {
			out = append(out, mirrorEntry{fmt.Sprintf("ImageContentSourcePolicy %q spec.repositoryDigestMirrors[%d]", o.Name, i), m.Source, m.Mirrors, "", PullFromMirrorDigestOnly})
		}
	}
	for _, o := range in.IDMS {
		for i, m := range o.Spec.ImageDigestMirrors {
			out = append(out, mirrorEntry{fmt.Sprintf("ImageDigestMirrorSet %q spec.imageDigestMirrors[%d]", o.Name, i), m.Source, mirrorStrings(m.Mirrors), m.MirrorSourcePolicy, PullFromMirrorDigestOnly})
		}
	}
	for _, o := range in.ITMS {
		for i, m := range o.Spec.ImageTagMirrors {
			out = append(out, mirrorEntry{fmt.Sprintf("ImageTagMirrorSet %q spec.imageTagMirrors[%d]", o.Name, i), m.Source, mirrorStrings(m.Mirrors), m.MirrorSourcePolicy, PullFromMirrorTagOnly})
		}
	}
	return out
}

func mirrorStrings(ms []configv1.ImageMirror) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

// MirrorEntries is the number of sources the image-mirror objects of in
// list (spec.imageDigestMirrors, imageTagMirrors, repositoryDigestMirrors).
func MirrorEntries(in Inputs) int { return len(entries(in)) }

// validScope: a host or repository, or a wildcard host "*.example.com"
// and nothing else with a star (the MCO's check of registrySources).
func validScope(s string) bool {
	switch {
	case s == "":
		return false
	case !strings.Contains(s, "*"):
		return true
	}
	return strings.HasPrefix(s, "*.") && !strings.ContainsAny(s[2:], "/@:*")
}

// Validate refuses what the MCO's container-runtime-config controller
// refuses: a bad insecure, blocked or allowed scope, allowed and blocked
// registries both set, a bad source or mirror, one source with two
// mirrorSourcePolicies, NeverContactSource with the source among its
// mirrors. It checks everything and returns an *InvalidError naming each
// object and field, or nil. Both modes refuse the whole rendering then
// (the MCO renders nothing; ndp's registries controller keeps the previous
// file): an object cannot be left out alone, since leaving out a
// NeverContactSource set would let pulls reach its source, and a conflict
// is between two objects.
func Validate(in Inputs) error {
	var errs []error
	const image = "image.config.openshift.io cluster spec.registrySources"
	for _, l := range []struct {
		field  string
		scopes []string
	}{{"insecureRegistries", in.Insecure}, {"blockedRegistries", in.Blocked}, {"allowedRegistries", in.Allowed}} {
		for i, s := range l.scopes {
			if !validScope(s) {
				errs = append(errs, fmt.Errorf("%s.%s[%d]: invalid scope %q (a host or repository, or *.domain)", image, l.field, i, s))
			}
		}
	}
	if len(in.Allowed) > 0 && len(in.Blocked) > 0 {
		errs = append(errs, fmt.Errorf("%s: only one of allowedRegistries or blockedRegistries may be set", image))
	}
	type firstPolicy struct {
		policy configv1.MirrorSourcePolicy
		field  string
	}
	policies := map[string]firstPolicy{}
	for _, e := range entries(in) {
		if !sourcePattern.MatchString(e.source) {
			errs = append(errs, fmt.Errorf("%s.source: invalid source %q (host[:port][/repository] or *.domain)", e.field, e.source))
			continue
		}
		pol := e.policy
		if pol == "" {
			pol = configv1.AllowContactingSource
		}
		if first, ok := policies[e.source]; !ok {
			policies[e.source] = firstPolicy{pol, e.field}
		} else if first.policy != pol {
			errs = append(errs, fmt.Errorf("%s: mirrorSourcePolicy %s for source %q conflicts with %s of %s", e.field, pol, e.source, first.policy, first.field))
		}
		for i, m := range e.mirrors {
			switch {
			case !mirrorPattern.MatchString(m):
				errs = append(errs, fmt.Errorf("%s.mirrors[%d]: invalid mirror %q (host[:port][/repository])", e.field, i, m))
			case m == e.source && pol == configv1.NeverContactSource:
				errs = append(errs, fmt.Errorf("%s.mirrors[%d]: %q is the source itself, which mirrorSourcePolicy NeverContactSource never contacts", e.field, i, m))
			}
		}
	}
	if len(errs) > 0 {
		return &InvalidError{Errs: errs}
	}
	return nil
}

// Render is registries.conf as the MCO's container-runtime-config
// controller writes it from base (the pool's template registries.conf;
// ndp's registries controller has its own base) and in, after Validate
// (an *InvalidError): the base with the mirror sets merged per source
// (the chains of every object ordered together, ties by name), digest
// mirrors (IDMS, ICSP) before tag mirrors (ITMS), each appended to the
// source's existing [[registry]] entry (or a new one, by location, or by
// prefix for a wildcard), blocked for NeverContactSource; insecure and
// blocked scopes mark their entry and every entry (and, for insecure,
// every mirror) inside them; a registry inside a mirrored scope without
// mirrors of its own gets the scope's mirrors with its sub-path. Allowed
// and Search are not in registries.conf.
//
// Not modelled: the release payload's repository (the MCO keeps it
// reachable when it is blocked and refuses blocking it without a mirror).
func Render(base []byte, in Inputs) ([]byte, error) {
	if err := Validate(in); err != nil {
		return nil, err
	}
	var conf sysregistriesv2.V2RegistriesConf
	if _, err := toml.Decode(string(base), &conf); err != nil {
		return nil, fmt.Errorf("base %s: %w", ConfPath, err)
	}
	if err := edit(&conf, in); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(conf); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
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
	for _, source := range slices.Sorted(maps.Keys(c.chains)) {
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
	all := slices.Sorted(maps.Keys(g.succ))
	preds := maps.Clone(g.preds)
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

// edit applies the mirror sets and the insecure and blocked scopes to
// conf (see Render).
func edit(conf *sysregistriesv2.V2RegistriesConf, in Inputs) error {
	entry := func(scope string) *Registry {
		for i := range conf.Registries {
			if Scope(&conf.Registries[i]) == scope {
				return &conf.Registries[i]
			}
		}
		r := Registry{}
		if strings.HasPrefix(scope, "*.") {
			r.Prefix = scope
		} else {
			r.Location = scope
		}
		conf.Registries = append(conf.Registries, r)
		return &conf.Registries[len(conf.Registries)-1]
	}
	chains := map[string]*mirrorChains{}
	for _, pull := range []string{PullFromMirrorDigestOnly, PullFromMirrorTagOnly} {
		chains[pull] = &mirrorChains{chains: map[string][][]string{}, never: map[string]bool{}}
	}
	for _, e := range entries(in) {
		chains[e.pull].add(e.source, e.policy, e.mirrors)
	}
	var all []mergedSet
	for _, pull := range []string{PullFromMirrorDigestOnly, PullFromMirrorTagOnly} {
		sets := chains[pull].merged()
		for _, s := range sets {
			r := entry(s.source)
			if s.never {
				r.Blocked = true
			}
			for _, m := range s.mirrors {
				r.Mirrors = append(r.Mirrors, Endpoint{Location: m, PullFromMirror: pull})
			}
		}
		all = append(all, sets...)
	}
	for _, s := range in.Blocked {
		entry(s)
	}
	for _, s := range in.Insecure {
		entry(s).Insecure = true
		for i := range conf.Registries {
			r := &conf.Registries[i]
			if scopeWithin(Scope(r), s) {
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
			if scopeWithin(Scope(&conf.Registries[i]), s) {
				conf.Registries[i].Blocked = true
			}
		}
	}
	// A registry inside a mirrored scope, without mirrors of its own,
	// would not use the scope's: it gets them, with its sub-path.
	for _, s := range all {
		mirrored := entry(s.source)
		scope := Scope(mirrored)
		mirrors := slices.Clone(mirrored.Mirrors)
		for i := range conf.Registries {
			r := &conf.Registries[i]
			sub := Scope(r)
			if sub == scope || !scopeWithin(sub, scope) || len(r.Mirrors) > 0 {
				continue
			}
			if strings.HasPrefix(scope, "*.") || !strings.HasPrefix(sub, scope) {
				return fmt.Errorf("%s: cannot carry the mirrors of %q over to %q inside it", ConfPath, scope, sub)
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
