package certs_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/webhook/certs"
)

var (
	env      *envtest.Environment
	restCfg  *rest.Config
	k8s      client.Client
	validity = 90 * 24 * time.Hour
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts one real kube-apiserver and etcd for the whole package.
func run(m *testing.M) int {
	logf.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	return testkit.Main(m, testkit.ControlPlaneOptions{Root: "../..", NoCRDs: true}, func(cp *testkit.ControlPlane) (func(), error) {
		env, restCfg, k8s = cp.Env, cp.Config, cp.Client
		return nil, nil
	})
}

// fixture is one SelfSigned in its own namespace, with its own webhook
// configuration and a clock the test moves.
type fixture struct {
	s       *certs.SelfSigned
	now     time.Time
	webhook string // name of its ValidatingWebhookConfiguration
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "certs-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	f := &fixture{now: time.Now(), webhook: ns.Name + "-webhook"}
	createWebhookConfiguration(t, f.webhook)
	f.s = &certs.SelfSigned{
		Client:     k8s,
		Namespace:  ns.Name,
		SecretName: "ndp-webhook-self-signed",
		DNSNames: []string{
			"ndp-webhook." + ns.Name + ".svc",
			"ndp-webhook." + ns.Name + ".svc.cluster.local",
			"127.0.0.1",
		},
		CertDir:               filepath.Join(t.TempDir(), "serving-certs"),
		WebhookConfigurations: []string{f.webhook},
		Validity:              validity,
		Now:                   func() time.Time { return f.now },
	}
	return f
}

func createWebhookConfiguration(t *testing.T, name string) {
	t.Helper()
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	hook := func(n string) admissionregistrationv1.ValidatingWebhook {
		url := "https://127.0.0.1:9443/" + n
		return admissionregistrationv1.ValidatingWebhook{
			Name:                    n + ".ndp.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           &ignore,
		}
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{hook("validate-policy"), hook("preview-machineconfig")},
	}
	if err := k8s.Create(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), cfg) })
}

func (f *fixture) ensure(t *testing.T) {
	t.Helper()
	if err := f.s.Ensure(context.Background()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
}

func (f *fixture) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: f.s.Namespace, Name: f.s.SecretName}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func (f *fixture) webhookConfiguration(t *testing.T) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: f.webhook}, &cfg); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// checkAll checks that the Secret holds a serving certificate that verifies
// against its ca.crt for every name with ServerAuth usage at f.now, that the
// files match it and that both webhooks carry ca.crt. It returns the Secret
// and the serving certificate.
func (f *fixture) checkAll(t *testing.T) (*corev1.Secret, *x509.Certificate) {
	t.Helper()
	secret := f.secret(t)
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %q, want %q", secret.Type, corev1.SecretTypeTLS)
	}
	leaf := verifyServing(t, secret.Data, f.s.DNSNames, f.now)

	for _, name := range []string{"tls.crt", "tls.key"} {
		got, err := os.ReadFile(filepath.Join(f.s.CertDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, secret.Data[name]) {
			t.Errorf("%s in CertDir differs from the Secret's", name)
		}
	}
	if fi, err := os.Stat(filepath.Join(f.s.CertDir, "tls.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("tls.key: mode %v, err %v; want 0600", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(f.s.CertDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("CertDir: mode %v, err %v; want 0700", fi.Mode().Perm(), err)
	}
	if !certs.CertFilesPresent(f.s.CertDir) {
		t.Error("CertFilesPresent is false after Ensure")
	}

	cfg := f.webhookConfiguration(t)
	if len(cfg.Webhooks) != 2 {
		t.Fatalf("%d webhooks, want 2", len(cfg.Webhooks))
	}
	for _, w := range cfg.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, secret.Data["ca.crt"]) {
			t.Errorf("webhook %s: caBundle is not the Secret's ca.crt", w.Name)
		}
	}
	return secret, leaf
}

// verifyServing checks the certificate and key in data as a TLS client would.
func verifyServing(t *testing.T, data map[string][]byte, names []string, now time.Time) *x509.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(data["tls.crt"], data["tls.key"])
	if err != nil {
		t.Fatalf("tls.crt/tls.key: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	for _, name := range names {
		_, err := leaf.Verify(x509.VerifyOptions{
			DNSName:     name,
			Roots:       roots,
			CurrentTime: now,
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			t.Errorf("serving certificate for %q: %v", name, err)
		}
	}
	return leaf
}

// caCerts parses every certificate of a PEM bundle.
func caCerts(t *testing.T, bundle []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return out
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

func TestEnsureCreates(t *testing.T) {
	f := newFixture(t)
	// A configuration that is not installed (yet) is skipped, not an error.
	f.s.WebhookConfigurations = append(f.s.WebhookConfigurations, "ndp-not-installed")
	f.ensure(t)

	_, leaf := f.checkAll(t)
	if len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("IP addresses %v, want [127.0.0.1]", leaf.IPAddresses)
	}
	if len(leaf.DNSNames) != 2 {
		t.Errorf("DNS names %v, want the two service names", leaf.DNSNames)
	}
	if _, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Errorf("serving key is %T, want ECDSA", leaf.PublicKey)
	}
	if got := leaf.NotAfter.Sub(leaf.NotBefore); got < validity || got > validity+2*time.Minute {
		t.Errorf("lifetime %s, want %s plus the clock-skew margin", got, validity)
	}
	if !leaf.NotBefore.Before(f.now) {
		t.Errorf("NotBefore %s is not before now %s", leaf.NotBefore, f.now)
	}
	cas := caCerts(t, f.secret(t).Data["ca.crt"])
	if len(cas) != 1 || !cas[0].IsCA {
		t.Errorf("ca.crt holds %d certificates, want one CA", len(cas))
	}
}

func TestEnsureIsNoOp(t *testing.T) {
	f := newFixture(t)
	f.ensure(t)
	secret := f.secret(t)
	cfg := f.webhookConfiguration(t)
	stat := func() []os.FileInfo {
		var out []os.FileInfo
		for _, name := range []string{"tls.crt", "tls.key"} {
			fi, err := os.Stat(filepath.Join(f.s.CertDir, name))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fi)
		}
		return out
	}
	before := stat()

	// Again, and a month later: still well before the last third.
	f.ensure(t)
	f.now = f.now.Add(30 * 24 * time.Hour)
	f.ensure(t)

	if rv := f.secret(t).ResourceVersion; rv != secret.ResourceVersion {
		t.Errorf("Secret resourceVersion %s -> %s, want unchanged", secret.ResourceVersion, rv)
	}
	if rv := f.webhookConfiguration(t).ResourceVersion; rv != cfg.ResourceVersion {
		t.Errorf("ValidatingWebhookConfiguration resourceVersion %s -> %s, want unchanged", cfg.ResourceVersion, rv)
	}
	for i, fi := range stat() {
		if !os.SameFile(fi, before[i]) || !fi.ModTime().Equal(before[i].ModTime()) {
			t.Errorf("%s was rewritten", fi.Name())
		}
	}
	f.checkAll(t)
}

func TestEnsureRotates(t *testing.T) {
	f := newFixture(t)
	f.ensure(t)
	oldSecret, oldLeaf := f.checkAll(t)
	oldCAs := caCerts(t, oldSecret.Data["ca.crt"])

	// A certwatcher on the files, as the webhook server runs it.
	cw, err := certwatcher.New(filepath.Join(f.s.CertDir, "tls.crt"), filepath.Join(f.s.CertDir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cw.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("certwatcher: %v", err)
		}
	}()
	time.Sleep(300 * time.Millisecond) // let it add its watches (it also polls every 10s)

	// Just past two thirds of the lifetime.
	f.now = oldLeaf.NotBefore.Add(oldLeaf.NotAfter.Sub(oldLeaf.NotBefore) * 2 / 3).Add(time.Minute)
	f.ensure(t)
	secret, leaf := f.checkAll(t)
	if secret.ResourceVersion == oldSecret.ResourceVersion || leaf.Equal(oldLeaf) {
		t.Fatal("Ensure did not rotate the serving certificate")
	}
	cas := caCerts(t, secret.Data["ca.crt"])
	if len(cas) != 2 || cas[0].Equal(oldCAs[0]) || !cas[1].Equal(oldCAs[0]) {
		t.Fatalf("ca.crt after rotation holds %d certificates; want the new CA, then the old one", len(cas))
	}
	if err := leaf.CheckSignatureFrom(cas[0]); err != nil {
		t.Errorf("new serving certificate is not signed by the first CA: %v", err)
	}
	// A replica still serving the old certificate stays trusted.
	verifyServing(t, map[string][]byte{"tls.crt": oldSecret.Data["tls.crt"], "tls.key": oldSecret.Data["tls.key"], "ca.crt": secret.Data["ca.crt"]}, f.s.DNSNames, f.now)

	start := time.Now()
	for deadline := start.Add(12 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, _ := cw.GetCertificate(nil)
		if c != nil && bytes.Equal(c.Certificate[0], leaf.Raw) {
			t.Logf("certwatcher serves the new certificate after %s", time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("certwatcher still serves the old certificate")
		}
	}

	// The next rotation keeps only the previous CA, not every CA ever made.
	f.now = leaf.NotBefore.Add(leaf.NotAfter.Sub(leaf.NotBefore) * 2 / 3).Add(time.Minute)
	f.ensure(t)
	third, _ := f.checkAll(t)
	if got := caCerts(t, third.Data["ca.crt"]); len(got) != 2 || !got[1].Equal(cas[0]) {
		t.Errorf("ca.crt after a second rotation holds %d certificates; want the newest CA, then the previous one", len(got))
	}
}

func TestSecondReplicaSharesCert(t *testing.T) {
	f := newFixture(t)
	f.ensure(t)
	secret := f.secret(t)

	replica := *f.s
	replica.CertDir = filepath.Join(t.TempDir(), "replica")
	if err := replica.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rv := f.secret(t).ResourceVersion; rv != secret.ResourceVersion {
		t.Errorf("the second replica rewrote the Secret (resourceVersion %s -> %s)", secret.ResourceVersion, rv)
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		a, _ := os.ReadFile(filepath.Join(f.s.CertDir, name))
		b, err := os.ReadFile(filepath.Join(replica.CertDir, name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between replicas (err %v)", name, err)
		}
	}
}

// Replicas starting together on an empty namespace race to create the Secret;
// the losers use the winner's certificate.
func TestConcurrentReplicas(t *testing.T) {
	f := newFixture(t)
	replicas := make([]certs.SelfSigned, 4)
	errs := make([]error, len(replicas))
	var wg sync.WaitGroup
	for i := range replicas {
		replicas[i] = *f.s
		replicas[i].CertDir = filepath.Join(t.TempDir(), fmt.Sprint(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = replicas[i].Ensure(context.Background())
		}()
	}
	wg.Wait()
	secret := f.secret(t)
	for i := range replicas {
		if errs[i] != nil {
			t.Errorf("replica %d: %v", i, errs[i])
			continue
		}
		got, _ := os.ReadFile(filepath.Join(replicas[i].CertDir, "tls.crt"))
		if !bytes.Equal(got, secret.Data["tls.crt"]) {
			t.Errorf("replica %d serves a certificate other than the Secret's", i)
		}
	}
}

func TestBadSecretReplaced(t *testing.T) {
	// A valid pair from elsewhere, to build the subtler bad cases.
	donor := newFixture(t)
	donor.ensure(t)
	good := donor.secret(t).Data
	otherKey := pemKey(t)
	otherCA := selfSignedCA(t)

	for _, tc := range []struct {
		name string
		data map[string][]byte
	}{
		{"garbage", map[string][]byte{"tls.crt": []byte("garbage"), "tls.key": []byte("garbage"), "ca.crt": []byte("garbage")}},
		{"empty", map[string][]byte{"tls.crt": nil, "tls.key": nil}},
		{"key of another certificate", map[string][]byte{"tls.crt": good["tls.crt"], "tls.key": otherKey, "ca.crt": good["ca.crt"]}},
		{"ca.crt not the issuer", map[string][]byte{"tls.crt": good["tls.crt"], "tls.key": good["tls.key"], "ca.crt": otherCA}},
		{"no ca.crt", map[string][]byte{"tls.crt": good["tls.crt"], "tls.key": good["tls.key"]}},
		{"other names", good},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			bad := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: f.s.Namespace, Name: f.s.SecretName},
				Type:       corev1.SecretTypeTLS,
				Data:       tc.data,
			}
			if err := k8s.Create(context.Background(), bad); err != nil {
				t.Fatal(err)
			}
			f.ensure(t)
			secret, _ := f.checkAll(t)
			if secret.ResourceVersion == bad.ResourceVersion {
				t.Error("the bad Secret was not replaced")
			}
		})
	}
}

func TestSecretOfWrongType(t *testing.T) {
	f := newFixture(t)
	opaque := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.s.Namespace, Name: f.s.SecretName},
		Data:       map[string][]byte{"foo": []byte("bar")},
	}
	if err := k8s.Create(context.Background(), opaque); err != nil {
		t.Fatal(err)
	}
	err := f.s.Ensure(context.Background())
	want := fmt.Sprintf("Secret %s/%s: ", f.s.Namespace, f.s.SecretName)
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "kubernetes.io/tls") {
		t.Errorf("Ensure on an Opaque Secret: %v; want an error starting %q about its type", err, want)
	}
	if certs.CertFilesPresent(f.s.CertDir) {
		t.Error("files written although the Secret is unusable")
	}
}

func TestDNSNamesChanged(t *testing.T) {
	f := newFixture(t)
	f.ensure(t)
	oldSecret, oldLeaf := f.checkAll(t)

	f.s.DNSNames = []string{f.s.DNSNames[0], "ndp-webhook-v2." + f.s.Namespace + ".svc"}
	f.ensure(t)
	secret, leaf := f.checkAll(t)
	if leaf.Equal(oldLeaf) {
		t.Fatal("serving certificate not regenerated for the new DNS names")
	}
	if got := caCerts(t, secret.Data["ca.crt"]); len(got) != 2 || !got[1].Equal(caCerts(t, oldSecret.Data["ca.crt"])[0]) {
		t.Errorf("ca.crt holds %d certificates; want the new CA, then the still valid old one", len(got))
	}
}

// The RBAC markers in the package are enough for Ensure: run it as a user
// bound to exactly those rules (the Role in the test's namespace instead of
// ndp-system).
func TestRBACMarkersSuffice(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	user := "ndp-certs-" + f.s.Namespace
	var namespaced, cluster []rbacv1.PolicyRule
	for _, m := range rbacMarkers(t) {
		if m.namespace != "" {
			namespaced = append(namespaced, m.rule)
		} else {
			cluster = append(cluster, m.rule)
		}
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	for _, obj := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: f.s.Namespace, Name: "certs"}, Rules: namespaced},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.s.Namespace, Name: "certs"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "certs"},
			Subjects:   subjects,
		},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: cluster},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
			Subjects:   subjects,
		},
	} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
	}
	u, err := env.AddUser(envtest.User{Name: user}, restCfg)
	if err != nil {
		t.Fatal(err)
	}
	if f.s.Client, err = client.New(u.Config(), client.Options{}); err != nil {
		t.Fatal(err)
	}

	// Create, then rotate (update).
	f.ensure(t)
	_, leaf := f.checkAll(t)
	f.now = leaf.NotAfter
	f.ensure(t)
	f.checkAll(t)

	// Without the rules, the error names the Secret.
	stranger, err := env.AddUser(envtest.User{Name: user + "-stranger"}, restCfg)
	if err != nil {
		t.Fatal(err)
	}
	if f.s.Client, err = client.New(stranger.Config(), client.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Ensure(ctx); err == nil || !strings.HasPrefix(err.Error(), "Secret "+f.s.Namespace+"/") {
		t.Errorf("Ensure without RBAC: %v; want an error naming the Secret", err)
	}
}

type rbacMarker struct {
	namespace string
	rule      rbacv1.PolicyRule
}

// rbacMarkers parses the package's +kubebuilder:rbac markers.
func rbacMarkers(t *testing.T) []rbacMarker {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []rbacMarker
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		fh, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			spec, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "// +kubebuilder:rbac:")
			if !ok {
				continue
			}
			var m rbacMarker
			for _, kv := range strings.Split(spec, ",") {
				k, v, _ := strings.Cut(kv, "=")
				vals := strings.Split(strings.Trim(v, `"`), ";")
				switch k {
				case "groups":
					m.rule.APIGroups = vals
				case "resources":
					m.rule.Resources = vals
				case "verbs":
					m.rule.Verbs = vals
				case "namespace":
					m.namespace = v
				default:
					t.Fatalf("%s: unexpected rbac marker field %q", name, k)
				}
			}
			out = append(out, m)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if len(out) == 0 {
		t.Fatal("no +kubebuilder:rbac markers in the package")
	}
	return out
}

func TestStart(t *testing.T) {
	f := newFixture(t)
	f.s.CheckInterval = 50 * time.Millisecond
	if f.s.NeedLeaderElection() {
		t.Error("NeedLeaderElection is true; every replica must write its own files")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.s.Start(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); !certs.CertFilesPresent(f.s.CertDir); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Start did not write the files")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after its context was cancelled")
	}
	f.checkAll(t)
}

func TestEnsureRejectsIncompleteConfig(t *testing.T) {
	for name, s := range map[string]*certs.SelfSigned{
		"nil":         nil,
		"zero":        {},
		"no DNSNames": {Client: k8s, Namespace: "default", SecretName: "x", CertDir: t.TempDir()},
		"no CertDir":  {Client: k8s, Namespace: "default", SecretName: "x", DNSNames: []string{"a"}},
	} {
		if err := s.Ensure(context.Background()); err == nil {
			t.Errorf("%s: Ensure succeeded", name)
		}
	}
}

func TestCertFilesPresent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if certs.CertFilesPresent(filepath.Join(dir, "missing")) {
		t.Error("true for a missing directory")
	}
	write("tls.crt", "cert")
	if certs.CertFilesPresent(dir) {
		t.Error("true without tls.key")
	}
	write("tls.key", "")
	if certs.CertFilesPresent(dir) {
		t.Error("true with an empty tls.key")
	}
	write("tls.key", "key")
	if !certs.CertFilesPresent(dir) {
		t.Error("false with both files")
	}
}

func pemKey(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "someone else's CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
