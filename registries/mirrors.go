package registries

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
)

// MirrorRule is one source of an image-mirror object, as registries.conf
// needs it.
type MirrorRule struct {
	// Object names where the rule comes from, for errors and events:
	// `ImageDigestMirrorSet "x" spec.imageDigestMirrors[0]`.
	Object string
	Source string
	// Mirrors in the object's order of preference.
	Mirrors []string
	// PullFromMirror is digest-only (IDMS, ICSP) or tag-only (ITMS).
	PullFromMirror string
	// Blocked: NeverContactSource, pulls never fall back to the source.
	Blocked bool
}

// scopePattern is a repository or registry scope: host[:port][/path], or
// a wildcard host "*.example.com"; no scheme, tag or digest.
var scopePattern = regexp.MustCompile(`^(\*\.)?[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$`)

// MirrorRules collects the rules of every image-mirror object, objects in
// name order: ImageDigestMirrorSets and ImageContentSourcePolicies give
// digest-only mirrors, ImageTagMirrorSets tag-only ones. Invalid rules (a
// bad scope, a mirror equal to its source) are returned as errors and left
// out, so that one bad object does not block the others.
func MirrorRules(idms []configv1.ImageDigestMirrorSet, itms []configv1.ImageTagMirrorSet, icsp []operatorv1alpha1.ImageContentSourcePolicy) ([]MirrorRule, []error) {
	var rules []MirrorRule
	var errs []error
	add := func(object, source string, mirrors []string, pull string, blocked bool) {
		r := MirrorRule{Object: object, Source: strings.TrimSuffix(source, "/"), PullFromMirror: pull, Blocked: blocked}
		if err := validateScope(r.Source); err != nil {
			errs = append(errs, fmt.Errorf("%s: source: %w", object, err))
			return
		}
		for i, m := range mirrors {
			m = strings.TrimSuffix(m, "/")
			switch err := validateScope(m); {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: mirrors[%d]: %w", object, i, err))
				return
			case m == r.Source:
				errs = append(errs, fmt.Errorf("%s: mirrors[%d]: %q is the source itself", object, i, m))
				return
			}
			r.Mirrors = append(r.Mirrors, m)
		}
		if len(r.Mirrors) == 0 && !blocked {
			return // a source without mirrors that may be contacted changes nothing
		}
		rules = append(rules, r)
	}
	sort.Slice(idms, func(i, j int) bool { return idms[i].Name < idms[j].Name })
	for _, o := range idms {
		for i, m := range o.Spec.ImageDigestMirrors {
			add(fmt.Sprintf("ImageDigestMirrorSet %q spec.imageDigestMirrors[%d]", o.Name, i), m.Source, mirrorStrings(m.Mirrors), PullFromMirrorDigestOnly, m.MirrorSourcePolicy == configv1.NeverContactSource)
		}
	}
	sort.Slice(icsp, func(i, j int) bool { return icsp[i].Name < icsp[j].Name })
	for _, o := range icsp {
		for i, m := range o.Spec.RepositoryDigestMirrors {
			add(fmt.Sprintf("ImageContentSourcePolicy %q spec.repositoryDigestMirrors[%d]", o.Name, i), m.Source, m.Mirrors, PullFromMirrorDigestOnly, false)
		}
	}
	sort.Slice(itms, func(i, j int) bool { return itms[i].Name < itms[j].Name })
	for _, o := range itms {
		for i, m := range o.Spec.ImageTagMirrors {
			add(fmt.Sprintf("ImageTagMirrorSet %q spec.imageTagMirrors[%d]", o.Name, i), m.Source, mirrorStrings(m.Mirrors), PullFromMirrorTagOnly, m.MirrorSourcePolicy == configv1.NeverContactSource)
		}
	}
	return rules, errs
}

func mirrorStrings(ms []configv1.ImageMirror) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

func validateScope(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty")
	case strings.Contains(s, "://"):
		return fmt.Errorf("%q: no scheme allowed", s)
	case strings.ContainsAny(s, "@"):
		return fmt.Errorf("%q: no digest allowed", s)
	case !scopePattern.MatchString(s):
		return fmt.Errorf("%q is not a registry or repository (host[:port][/path])", s)
	}
	return nil
}

// Render adds the mirror rules to a base registries.conf: one registry per
// source, its mirrors in rule order without duplicates (a mirror listed for
// both digests and tags pulls both), blocked when any rule says
// NeverContactSource. The base's own registries for the same scope are
// replaced.
func Render(base *Config, rules []MirrorRule) *Config {
	out := &Config{}
	if base != nil {
		*out = *base
		out.Registries = append([]Registry(nil), base.Registries...)
	}
	bySource := map[string]*Registry{}
	var order []string
	for _, r := range rules {
		reg, ok := bySource[r.Source]
		if !ok {
			reg = &Registry{Endpoint: Endpoint{Location: r.Source}}
			if strings.HasPrefix(r.Source, "*.") {
				// containers/image: a wildcard is a prefix without location.
				reg = &Registry{Prefix: r.Source}
			}
			bySource[r.Source] = reg
			order = append(order, r.Source)
		}
		reg.Blocked = reg.Blocked || r.Blocked
		for _, m := range r.Mirrors {
			i := indexMirror(reg.Mirrors, m)
			switch {
			case i < 0:
				reg.Mirrors = append(reg.Mirrors, Endpoint{Location: m, PullFromMirror: r.PullFromMirror})
			case reg.Mirrors[i].PullFromMirror != r.PullFromMirror:
				reg.Mirrors[i].PullFromMirror = PullFromMirrorAll
			}
		}
	}
	kept := out.Registries[:0]
	for _, reg := range out.Registries {
		if _, replaced := bySource[Scope(&reg)]; !replaced {
			kept = append(kept, reg)
		}
	}
	out.Registries = kept
	for _, s := range order {
		out.Registries = append(out.Registries, *bySource[s])
	}
	sort.SliceStable(out.Registries, func(i, j int) bool { return Scope(&out.Registries[i]) < Scope(&out.Registries[j]) })
	return out
}

func indexMirror(ms []Endpoint, loc string) int {
	for i, m := range ms {
		if m.Location == loc {
			return i
		}
	}
	return -1
}
