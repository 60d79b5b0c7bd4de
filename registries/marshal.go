package registries

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// Marshal writes a Config as registries.conf in the layout CRI-O's own
// files use, every setting of containers/image's V2RegistriesConf included.
// Keys the library does not model (Config.Other) are not written.
func Marshal(c *Config) []byte {
	var b bytes.Buffer
	list := func(xs []string) string {
		q := make([]string, len(xs))
		for i, x := range xs {
			q[i] = tomlString(x)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	fmt.Fprintf(&b, "unqualified-search-registries = %s\n", list(c.UnqualifiedSearchRegistries))
	if c.ShortNameMode != "" {
		fmt.Fprintf(&b, "short-name-mode = %s\n", tomlString(c.ShortNameMode))
	}
	if len(c.CredentialHelpers) > 0 {
		fmt.Fprintf(&b, "credential-helpers = %s\n", list(c.CredentialHelpers))
	}
	if c.AdditionalLayerStoreAuthHelper != "" {
		fmt.Fprintf(&b, "additional-layer-store-auth-helper = %s\n", tomlString(c.AdditionalLayerStoreAuthHelper))
	}
	for _, r := range c.Registries {
		b.WriteString("\n[[registry]]\n")
		fmt.Fprintf(&b, "  prefix = %s\n", tomlString(r.Prefix))
		if r.Location != "" {
			fmt.Fprintf(&b, "  location = %s\n", tomlString(r.Location))
		}
		if r.Insecure {
			b.WriteString("  insecure = true\n")
		}
		if r.NamespaceProxy != "" {
			fmt.Fprintf(&b, "  namespace-proxy = %s\n", tomlString(r.NamespaceProxy))
		}
		if r.Blocked {
			b.WriteString("  blocked = true\n")
		}
		if r.MirrorByDigestOnly {
			b.WriteString("  mirror-by-digest-only = true\n")
		}
		for _, m := range r.Mirrors {
			b.WriteString("\n  [[registry.mirror]]\n")
			fmt.Fprintf(&b, "    location = %s\n", tomlString(m.Location))
			if m.Insecure {
				b.WriteString("    insecure = true\n")
			}
			if m.PullFromMirror != "" {
				fmt.Fprintf(&b, "    pull-from-mirror = %s\n", tomlString(m.PullFromMirror))
			}
			if m.NamespaceProxy != "" {
				fmt.Fprintf(&b, "    namespace-proxy = %s\n", tomlString(m.NamespaceProxy))
			}
		}
	}
	if len(c.Aliases) > 0 {
		b.WriteString("\n[aliases]\n")
		keys := make([]string, 0, len(c.Aliases))
		for k := range c.Aliases {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s = %s\n", tomlString(k), tomlString(c.Aliases[k]))
		}
	}
	return b.Bytes()
}

// tomlString writes s as a TOML 1.0 basic string. strconv.Quote is not
// TOML: its \a and \v escapes are in no TOML version and its \x escapes
// only in TOML 1.1, so a control character in a setting made the rendered
// file unreadable (CRI-O's parser, containers/image, reads TOML 1.0).
func tomlString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r) // TOML takes any other character as is
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
