package loader

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/planner/sandbox"
)

// MaxBundleBytes bounds an OPA bundle.
const MaxBundleBytes = 8 << 20

// bundleKeyID names the key in a bundle's signature; verification is
// against the one key given, whatever it is called.
const bundleKeyID = "ndp"

// BundleOptions describe a policy bundle to build.
type BundleOptions struct {
	// Name of the policy; by default the package root of its modules.
	Name string
	// Priority of the policy; by default 100.
	Priority *int32
	// SigningKey is a PEM private key (RSA or ECDSA); when set the bundle
	// carries a signature over every file.
	SigningKey []byte
	// Check, when set, is run on the bundle's policy before it is signed:
	// planner.CheckPolicy compiles it and evaluates the probe change set as
	// the planner will. Building is the only step that needs the engine, so
	// the loader leaves it to the caller rather than link the planner.
	Check func(policy.Policy) error
}

// BuildBundle packages the Rego modules and tests under dir as an OPA
// bundle: roots ndp/policy/<name> (and <name>_test), a revision that digests
// the files, and metadata name and priority. The modules are parsed as the
// planner would (Rego v1, the sandbox, one package root), then opts.Check
// runs on the policy.
func BuildBundle(dir string, opts BundleOptions) (*bundle.Bundle, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".rego") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, unwrapPathError(err))
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("bundle %s: no .rego files", dir)
	}
	sort.Strings(files)
	b := &bundle.Bundle{Data: map[string]any{}}
	roots := map[string]bool{}
	name := opts.Name
	digest := sha256.New()
	for _, path := range files {
		raw, err := readLimited(path, policy.MaxModuleBytes)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %s: %w", dir, path, err)
		}
		mod, err := ast.ParseModuleWithOpts(path, string(raw), ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: sandbox.Capabilities})
		if err != nil {
			return nil, policy.NewSources().RegoError(err, &policy.Policy{Name: name, Origin: path})
		}
		root, err := policy.Root(mod)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		roots["ndp/policy/"+root] = true
		if !strings.HasSuffix(path, "_test.rego") && name == "" {
			name = root
		}
		rel, _ := filepath.Rel(dir, path)
		url := "/" + filepath.ToSlash(rel)
		b.Modules = append(b.Modules, bundle.ModuleFile{URL: url, Path: url, Raw: raw, Parsed: mod})
		fmt.Fprintf(digest, "%s\x00%d\x00", url, len(raw))
		digest.Write(raw)
	}
	if name == "" {
		return nil, fmt.Errorf("bundle %s: only tests, no policy module", dir)
	}
	rootList := make([]string, 0, len(roots))
	for r := range roots {
		rootList = append(rootList, r)
	}
	sort.Strings(rootList)
	priority := v1alpha1.UserDefaultPriority
	if opts.Priority != nil {
		priority = *opts.Priority
	}
	b.Manifest = bundle.Manifest{
		Revision: "sha256:" + hex.EncodeToString(digest.Sum(nil)),
		Roots:    &rootList,
		Metadata: map[string]any{"name": name, "priority": priority},
	}
	regoV1 := 1
	b.Manifest.RegoVersion = &regoV1
	pol, err := bundlePolicy(dir, b)
	if err != nil {
		return nil, err
	}
	if opts.Check != nil {
		if err := opts.Check(pol); err != nil {
			return nil, err
		}
	}
	if len(opts.SigningKey) > 0 {
		if err := SignBundle(b, opts.SigningKey); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// SignBundle signs every file of a bundle with a PEM private key (RSA or
// ECDSA), replacing any earlier signature.
func SignBundle(b *bundle.Bundle, key []byte) error {
	alg, err := keyAlgorithm(key, true)
	if err != nil {
		return fmt.Errorf("signing key: %w", err)
	}
	if err := b.GenerateSignature(bundle.NewSigningConfig(string(key), alg, ""), bundleKeyID, false); err != nil {
		return fmt.Errorf("signing bundle: %w", err)
	}
	return nil
}

// WriteBundle writes a bundle as .tar.gz.
func WriteBundle(w io.Writer, b *bundle.Bundle) error {
	return bundle.NewWriter(w).Write(*b)
}

// ReadBundle reads an OPA bundle (.tar.gz) as one policy. With a public
// key, the bundle must be signed by the matching private key and every file
// must match its signed digest. Its name and priority come from the manifest
// metadata ("name", "priority"), else from its roots ndp/policy/<name>.
func ReadBundle(origin string, r io.Reader, publicKey []byte) (policy.Policy, error) {
	data, err := readArchive(r)
	if err != nil {
		return policy.Policy{}, &machineconfig.InputError{Object: origin, Err: fmt.Errorf("invalid OPA bundle: %w", err)}
	}
	reader := bundle.NewReader(bytes.NewReader(data)).
		WithRegoVersion(ast.RegoV1).
		WithCapabilities(sandbox.Capabilities).
		WithSizeLimitBytes(MaxBundleBytes)
	if len(publicKey) > 0 {
		alg, err := keyAlgorithm(publicKey, false)
		if err != nil {
			return policy.Policy{}, &machineconfig.InputError{Object: origin, Field: "public key", Err: err}
		}
		keys := map[string]*bundle.KeyConfig{bundleKeyID: {Key: string(publicKey), Algorithm: alg}}
		reader = reader.WithBundleVerificationConfig(bundle.NewVerificationConfig(keys, bundleKeyID, "", nil))
	} else {
		reader = reader.WithSkipBundleVerification(true)
	}
	b, err := reader.Read()
	if err != nil {
		msg := err.Error()
		if len(publicKey) > 0 && strings.Contains(msg, "signature") {
			msg = "signature verification failed: " + msg
		}
		return policy.Policy{}, &machineconfig.InputError{Object: origin, Err: fmt.Errorf("invalid OPA bundle: %s", msg)}
	}
	return bundlePolicy(origin, &b)
}

func bundlePolicy(origin string, b *bundle.Bundle) (policy.Policy, error) {
	p := policy.Policy{Origin: origin, Priority: v1alpha1.UserDefaultPriority}
	if name, ok := b.Manifest.Metadata["name"].(string); ok {
		p.Name = name
	}
	switch prio := b.Manifest.Metadata["priority"].(type) {
	case nil:
	case json.Number, float64, int32, int:
		v, err := jsonInt(prio)
		if err != nil || v < 0 || v > 1000000 {
			return policy.Policy{}, &machineconfig.InputError{Object: origin, Field: ".manifest metadata.priority", Err: fmt.Errorf("must be an integer from 0 to 1000000, got %v", prio)}
		}
		p.Priority = int32(v)
	default:
		return policy.Policy{}, &machineconfig.InputError{Object: origin, Field: ".manifest metadata.priority", Err: fmt.Errorf("must be an integer, got %v", prio)}
	}
	if p.Name == "" && b.Manifest.Roots != nil {
		// Roots ndp/policy/<name> (and its tests, ndp/policy/<name>_test).
		names := map[string]bool{}
		for _, r := range *b.Manifest.Roots {
			names[strings.TrimSuffix(strings.TrimPrefix(r, "ndp/policy/"), "_test")] = true
		}
		if len(names) == 1 {
			for n := range names {
				p.Name = n
			}
		}
	}
	if p.Name == "" {
		return policy.Policy{}, &machineconfig.InputError{Object: origin, Field: ".manifest", Err: errors.New(`name the policy: metadata.name, or roots "ndp/policy/<name>" (and "ndp/policy/<name>_test")`)}
	}
	mods := append([]bundle.ModuleFile(nil), b.Modules...)
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	for _, m := range mods {
		mod := policy.Module{Filename: origin + ":" + strings.TrimPrefix(m.Path, "/"), Source: string(m.Raw)}
		if strings.HasSuffix(m.Path, "_test.rego") {
			p.Tests = append(p.Tests, mod)
		} else {
			p.Modules = append(p.Modules, mod)
		}
	}
	return p, nil
}

func jsonInt(v any) (int64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Int64()
	case float64:
		if x != float64(int64(x)) {
			return 0, errors.New("not an integer")
		}
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int:
		return int64(x), nil
	}
	return 0, errors.New("not a number")
}

// ReadUnverifiedBundle reads a bundle for signing: its files, unverified,
// within the same size limits as ReadBundle.
func ReadUnverifiedBundle(r io.Reader) (*bundle.Bundle, error) {
	data, err := readArchive(r)
	if err != nil {
		return nil, err
	}
	b, err := bundle.NewReader(bytes.NewReader(data)).WithSkipBundleVerification(true).WithRegoVersion(ast.RegoV1).WithSizeLimitBytes(MaxBundleBytes).Read()
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// BundleRoots returns the manifest roots of a bundle file's policy set, for
// overlap checks between bundles.
func BundleRoots(r io.Reader) ([]string, error) {
	data, err := readArchive(r)
	if err != nil {
		return nil, fmt.Errorf("invalid OPA bundle: %w", err)
	}
	b, err := bundle.NewReader(bytes.NewReader(data)).WithSkipBundleVerification(true).WithRegoVersion(ast.RegoV1).WithSizeLimitBytes(MaxBundleBytes).Read()
	if err != nil || b.Manifest.Roots == nil {
		return nil, err
	}
	return *b.Manifest.Roots, nil
}

// readArchive reads a bundle, at most MaxBundleBytes, and checks that its
// files, uncompressed, hold at most MaxBundleBytes in all, before OPA's
// reader sees it: that reader allocates each file's buffer at the size its
// tar header declares, so a 151-byte bundle declaring a 100 GiB file makes
// the process fail to allocate and die, and a compressed bomb inflates in
// full. The check streams the archive and keeps nothing.
func readArchive(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBundleBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxBundleBytes {
		return nil, fmt.Errorf("the bundle is more than %s", sandbox.FormatBytes(MaxBundleBytes))
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return data, nil // not gzip: OPA's reader says what it is not
	}
	tr := tar.NewReader(gz)
	var total int64
	for {
		h, err := tr.Next()
		if err != nil {
			return data, nil // the end, or a broken archive OPA reports
		}
		if h.Size > MaxBundleBytes-total {
			return nil, fmt.Errorf("file %s is %s uncompressed, and the files of a bundle may hold %s in all", strings.TrimPrefix(h.Name, "/"), sandbox.FormatBytes(h.Size), sandbox.FormatBytes(MaxBundleBytes))
		}
		n, err := io.Copy(io.Discard, tr)
		total += n
		if err != nil {
			return data, nil
		}
	}
}

// RootsOverlap reports a root of a that equals, contains or is contained
// in a root of b: two bundles may not write the same part of data.
func RootsOverlap(a, b []string) (string, string, bool) {
	for _, x := range a {
		for _, y := range b {
			if x == y || strings.HasPrefix(x, y+"/") || strings.HasPrefix(y, x+"/") || x == "" || y == "" {
				return x, y, true
			}
		}
	}
	return "", "", false
}

// keyAlgorithm picks the JWS algorithm for a PEM key: RS256 for RSA,
// ES256/384/512 for ECDSA by curve.
func keyAlgorithm(pemBytes []byte, private bool) (string, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return "", errors.New("not a PEM-encoded key")
	}
	var key any
	var err error
	if private {
		switch block.Type {
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		}
	} else {
		switch block.Type {
		case "RSA PUBLIC KEY":
			key, err = x509.ParsePKCS1PublicKey(block.Bytes)
		default:
			key, err = x509.ParsePKIXPublicKey(block.Bytes)
		}
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", block.Type, err)
	}
	var curve elliptic.Curve
	switch k := key.(type) {
	case *rsa.PrivateKey, *rsa.PublicKey:
		return "RS256", nil
	case *ecdsa.PrivateKey:
		curve = k.Curve
	case *ecdsa.PublicKey:
		curve = k.Curve
	default:
		return "", fmt.Errorf("unsupported key type %T: use RSA or ECDSA", key)
	}
	switch curve {
	case elliptic.P256():
		return "ES256", nil
	case elliptic.P384():
		return "ES384", nil
	case elliptic.P521():
		return "ES512", nil
	}
	return "", errors.New("unsupported ECDSA curve")
}

// ReadBundleFile reads a bundle from disk.
func ReadBundleFile(path string, publicKey []byte) (policy.Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return policy.Policy{}, fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	return ReadBundle(path, bytes.NewReader(data), publicKey)
}
