// Package bundletest helps tests tamper with OPA bundles the way an
// attacker between a template owner and a cluster would.
package bundletest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
)

// AlterFile changes one byte of the named file inside a bundle tarball
// (the first byte of "service" becomes "S") and repacks it.
func AlterFile(tarball []byte, name string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tarball))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	altered := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(h.Name, "/") == name {
			i := bytes.Index(data, []byte("service"))
			if i < 0 {
				return nil, fmt.Errorf("%s has no %q to alter", name, "service")
			}
			data[i] = 'S'
			altered = true
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if !altered {
		return nil, fmt.Errorf("no %s in the bundle", name)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
