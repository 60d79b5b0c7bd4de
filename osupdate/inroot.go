package osupdate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// InRoot is the host path p under root, its links resolved as the host
// resolves them: an absolute link (Debian's /var/run -> /run) points
// inside root, not into the daemon's own file system. What does not exist
// yet is joined as it is.
func InRoot(root, p string) (string, error) {
	rest := strings.Split(strings.Trim(filepath.Clean("/"+p), "/"), "/")
	cur := "/"
	for hops := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			cur = next // not a link, or not there: taken as it is
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("%s: too many links", p)
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(strings.Trim(target, "/"), "/"), rest...)
	}
	return filepath.Join(root, cur), nil
}
