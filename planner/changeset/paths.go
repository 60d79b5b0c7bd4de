package changeset

import (
	"strings"
)

// PathKey is the path a declarative entry or a claim's match names: written
// with or without a final "/", /etc/app and /etc/app/ are the same key.
func PathKey(p string) string {
	if len(p) > 1 {
		return strings.TrimSuffix(p, "/")
	}
	return p
}

// Covers reports whether a policy path claims a file, as the MCO's
// FindClosestFilePolicyPathMatch does: the path itself and everything
// beneath it, with or without a final "/" (/etc/app covers
// /etc/app/conf.d/x.conf, never /etc/app2/x).
func Covers(policyPath, file string) bool {
	k := PathKey(policyPath)
	return k == file || k == "/" && strings.HasPrefix(file, "/") || strings.HasPrefix(file, k+"/")
}
