package osupdate

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Kind is the kind of host an updater serves.
type Kind string

const (
	KindRpmOstree Kind = "rpm-ostree"
	KindApt       Kind = "apt"
	KindFlatcar   Kind = "flatcar"
	KindBootc     Kind = "bootc"
)

// Kinds are the kinds an administrator may name (ndp-daemon --os-updater),
// "auto" aside.
var Kinds = []Kind{KindRpmOstree, KindApt, KindFlatcar, KindBootc}

// ParseKind reads an administrator's choice; "auto" and "" are "" (detect).
func ParseKind(s string) (Kind, error) {
	if s == "" || s == "auto" {
		return "", nil
	}
	if k := Kind(s); slices.Contains(Kinds, k) {
		return k, nil
	}
	return "", fmt.Errorf("unknown OS updater %q: one of auto, rpm-ostree, apt, flatcar, bootc", s)
}

// OverridePath is where a host names its own updater (one of Kinds, a
// line), relative to its root: written into an image, or by a
// MachineConfig, where detection would choose another.
const OverridePath = "etc/ndp/os-updater"

// Choose says which updater serves the host at root: named (ndp-daemon's
// --os-updater) where it is set, else the host's own OverridePath, else
// what Detect finds.
func Choose(root string, named Kind) (Detection, error) {
	if named != "" {
		return Detection{Kind: named, Reason: "--os-updater=" + string(named)}, nil
	}
	b, err := os.ReadFile(filepath.Join(root, OverridePath))
	switch {
	case err == nil:
		k, err := ParseKind(strings.TrimSpace(string(b)))
		if err != nil {
			return Detection{}, fmt.Errorf("/%s: %w", OverridePath, err)
		}
		if k != "" {
			return Detection{Kind: k, Reason: "/" + OverridePath}, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return Detection{}, err
	}
	return Detect(root)
}

// Detection is which updater a host gets, and why.
type Detection struct {
	Kind Kind
	// Reason names what decided it ("/etc/os-release ID=debian", ...).
	Reason string
	// OSRelease is the host's /etc/os-release (or /usr/lib/os-release).
	OSRelease map[string]string
}

// Detect says which updater serves the host whose root file system is
// root, from files alone (nothing runs):
//   - Flatcar: os-release ID=flatcar. Its updates are update_engine's A/B
//     partitions, whatever else is installed.
//   - an ostree-booted host (/run/ostree-booted): rpm-ostree on CoreOS
//     (VARIANT_ID=coreos, or ID rhcos/scos: the MCO's hosts), bootc on
//     other image-mode hosts that have it, rpm-ostree otherwise.
//   - a dpkg host (ID or ID_LIKE debian, with apt-get and dpkg): apt.
//
// Anything else is an error naming the host's ID: the administrator then
// names the updater (--os-updater) or runs no OS updates on that host.
func Detect(root string) (Detection, error) {
	rel, err := readOSRelease(root)
	if err != nil {
		return Detection{}, err
	}
	d := Detection{OSRelease: rel}
	id, variant := rel["ID"], rel["VARIANT_ID"]
	like := strings.Fields(rel["ID_LIKE"])
	has := func(p string) bool {
		_, err := os.Stat(filepath.Join(root, p))
		return err == nil
	}
	switch {
	case id == "flatcar":
		d.Kind, d.Reason = KindFlatcar, "/etc/os-release ID=flatcar"
	case has("run/ostree-booted"):
		switch {
		case has("usr/bin/rpm-ostree") && (variant == "coreos" || id == "rhcos" || id == "scos"):
			d.Kind, d.Reason = KindRpmOstree, fmt.Sprintf("ostree-booted CoreOS (ID=%s VARIANT_ID=%s)", id, variant)
		case has("usr/bin/bootc"):
			d.Kind, d.Reason = KindBootc, fmt.Sprintf("ostree-booted image-mode host with bootc (ID=%s)", id)
		case has("usr/bin/rpm-ostree"):
			d.Kind, d.Reason = KindRpmOstree, fmt.Sprintf("ostree-booted host with rpm-ostree (ID=%s)", id)
		default:
			return d, fmt.Errorf("host ID=%s is ostree-booted but has neither rpm-ostree nor bootc: name the OS updater (--os-updater)", id)
		}
	case id == "debian" || id == "ubuntu" || slices.Contains(like, "debian") || slices.Contains(like, "ubuntu"):
		if !has("usr/bin/apt-get") || !has("usr/bin/dpkg") {
			return d, fmt.Errorf("host ID=%s is Debian-like but has no /usr/bin/apt-get or /usr/bin/dpkg: name the OS updater (--os-updater)", id)
		}
		d.Kind, d.Reason = KindApt, fmt.Sprintf("/etc/os-release ID=%s (dpkg and apt-get present)", id)
	default:
		return d, fmt.Errorf("no OS updater for host ID=%q (ID_LIKE=%q): name one (--os-updater), or leave OS changes out of this pool's configs", id, rel["ID_LIKE"])
	}
	return d, nil
}

// readOSRelease reads /etc/os-release, or /usr/lib/os-release where the
// former is missing (os-release(5)).
func readOSRelease(root string) (map[string]string, error) {
	for _, p := range []string{"etc/os-release", "usr/lib/os-release"} {
		f, err := os.Open(filepath.Join(root, p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		defer f.Close()
		rel, err := ParseOSRelease(f)
		if err != nil {
			return nil, fmt.Errorf("/%s: %w", p, err)
		}
		return rel, nil
	}
	return nil, fmt.Errorf("neither /etc/os-release nor /usr/lib/os-release on the host (root %s)", root)
}

// ParseOSRelease reads an os-release(5) file: KEY=value lines, values
// optionally quoted with shell quoting; blank lines and comments skipped.
// A line that is not an assignment is an error naming its number.
func ParseOSRelease(r interface{ Read([]byte) (int, error) }) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t\"'") {
			return nil, fmt.Errorf("line %d: not KEY=value: %q", n, line)
		}
		val, err := unquote(v)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", n, k, err)
		}
		out[k] = val
	}
	return out, sc.Err()
}

// unquote undoes os-release's shell quoting: "…" with \ escapes, '…'
// literal, or a bare word.
func unquote(v string) (string, error) {
	switch {
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		return v[1 : len(v)-1], nil
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		var b strings.Builder
		body := v[1 : len(v)-1]
		for i := 0; i < len(body); i++ {
			c := body[i]
			if c == '\\' && i+1 < len(body) {
				i++
				c = body[i]
			} else if c == '"' || c == '`' || c == '$' || c == '\\' {
				return "", fmt.Errorf("unescaped %q in a double-quoted value", c)
			}
			b.WriteByte(c)
		}
		return b.String(), nil
	case strings.ContainsAny(v, "\"'`$\\ \t"):
		return "", fmt.Errorf("value %s needs quoting", strconv.Quote(v))
	}
	return v, nil
}
