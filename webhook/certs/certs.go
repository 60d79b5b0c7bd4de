// Package certs keeps a self-signed serving certificate for ndp's admission
// webhook, for clusters with neither cert-manager nor OpenShift service-ca.
//
// A CA and a serving certificate are generated once and stored in a Secret that
// all ndp-controller replicas share; each replica writes them into its own
// CertDir for controller-runtime's webhook server (whose certwatcher reloads
// them), and the CA is injected into the caBundle of ndp's
// ValidatingWebhookConfigurations. The pair is regenerated when the serving
// certificate enters the last third of its lifetime; the previous CA stays in
// the bundle until it expires, so replicas still serving the old certificate
// stay trusted while they catch up.
//
// The CA's private key is never stored: every rotation makes a new CA.
package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The Secret is read and written with an uncached client, so get/create/update
// in its namespace is all it needs (no cluster-wide list/watch of Secrets);
// so are the webhook configurations, read and updated by name (get/update).
//
// +kubebuilder:rbac:groups="",namespace=ndp-system,resources=secrets,verbs=get;create;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;update

const (
	// CertFile and KeyFile are the names controller-runtime's webhook server
	// reads from its CertDir by default.
	CertFile = corev1.TLSCertKey       // "tls.crt"
	KeyFile  = corev1.TLSPrivateKeyKey // "tls.key"
	// CAFile is the Secret key holding the CA bundle (newest CA first).
	CAFile = "ca.crt"

	// DefaultValidity is the lifetime of each serving certificate.
	DefaultValidity = 90 * 24 * time.Hour
	// DefaultCheckInterval is how often Start re-checks the certificate.
	DefaultCheckInterval = time.Hour

	// retryAfterError bounds the wait after a failed check, so a transient
	// API error does not leave the certificate unchecked for a whole interval.
	retryAfterError = time.Minute
)

// SelfSigned keeps a self-signed serving certificate for the webhook.
type SelfSigned struct {
	Client     client.Client // a controller-runtime client (may be uncached)
	Namespace  string        // of the Secret, e.g. "ndp-system"
	SecretName string        // e.g. "ndp-webhook-self-signed"
	// DNSNames are the names the serving certificate must cover, e.g.
	// ndp-webhook.ndp-system.svc; entries that parse as IP addresses
	// ("127.0.0.1") go into the certificate's IP addresses instead.
	DNSNames []string
	CertDir  string // where tls.crt and tls.key are written for the webhook server
	// WebhookConfigurations names the ValidatingWebhookConfigurations whose
	// every webhook gets the CA bundle.
	WebhookConfigurations []string
	Validity              time.Duration    // of each certificate; default 90 days
	CheckInterval         time.Duration    // how often Start re-checks; default 1h
	Now                   func() time.Time // for tests; default time.Now
}

// NeedLeaderElection reports false: every replica writes its own files.
func (s *SelfSigned) NeedLeaderElection() bool { return false }

// Start runs Ensure every CheckInterval until ctx is done. Errors are logged,
// not returned, so a transient failure does not stop the manager; after one,
// the next check comes sooner (within a minute). Only an incomplete
// configuration is returned as an error.
func (s *SelfSigned) Start(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	log := logf.FromContext(ctx).WithName("webhook-certs")
	ctx = logf.IntoContext(ctx, log)
	interval := s.CheckInterval
	if interval <= 0 {
		interval = DefaultCheckInterval
	}
	for {
		wait := interval
		if err := s.Ensure(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error(err, "ensuring the webhook serving certificate")
			wait = min(interval, retryAfterError)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Ensure makes the Secret hold a valid, current certificate for DNSNames,
// injects its CA bundle into the webhook configurations and writes the
// serving certificate and key into CertDir. It changes nothing that is
// already right.
func (s *SelfSigned) Ensure(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	b, err := s.ensureSecret(ctx)
	if err != nil {
		return err
	}
	// The bundle goes to the API server first, so clients trust the new CA
	// before any replica serves a certificate it signed. The files are
	// written even if that failed: the webhook server cannot start without
	// them, and the next check retries the injection.
	injectErr := s.injectCABundle(ctx, b.ca)
	if err := writeFiles(s.CertDir, b); err != nil {
		return errors.Join(injectErr, fmt.Errorf("webhook certificate files in %s: %w", s.CertDir, err))
	}
	return injectErr
}

// check rejects a configuration Ensure cannot work with, instead of panicking.
func (s *SelfSigned) check() error {
	switch {
	case s == nil:
		return errors.New("webhook certs: nil SelfSigned")
	case s.Client == nil:
		return errors.New("webhook certs: no Client")
	case s.Namespace == "" || s.SecretName == "":
		return errors.New("webhook certs: Namespace and SecretName are required")
	case s.CertDir == "":
		return errors.New("webhook certs: no CertDir")
	case len(s.DNSNames) == 0:
		return errors.New("webhook certs: no DNSNames for the serving certificate")
	case s.Validity < 0:
		return fmt.Errorf("webhook certs: negative Validity %s", s.Validity)
	}
	return nil
}

func (s *SelfSigned) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *SelfSigned) validity() time.Duration {
	if s.Validity > 0 {
		return s.Validity
	}
	return DefaultValidity
}

// ensureSecret returns the Secret's bundle, after creating or replacing it if
// it is absent, unusable or due for rotation. If another replica writes the
// Secret first, its content is used instead (one retry, then an error).
func (s *SelfSigned) ensureSecret(ctx context.Context) (*bundle, error) {
	log := logf.FromContext(ctx).WithValues("secret", s.Namespace+"/"+s.SecretName)
	key := client.ObjectKey{Namespace: s.Namespace, Name: s.SecretName}
	wrap := func(err error) error {
		return fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.SecretName, err)
	}
	for attempt := 0; ; attempt++ {
		var secret corev1.Secret
		found := true
		if err := s.Client.Get(ctx, key, &secret); apierrors.IsNotFound(err) {
			found = false
		} else if err != nil {
			return nil, wrap(err)
		}
		if found && secret.Type != corev1.SecretTypeTLS {
			// The type is immutable; replacing it would need a delete, which
			// this package is deliberately not allowed to do.
			return nil, wrap(fmt.Errorf("has type %q, want %q: delete it so it can be recreated", secret.Type, corev1.SecretTypeTLS))
		}

		now := s.now()
		var old *bundle
		reason := "absent"
		if found {
			old = fromSecret(&secret)
			reason = old.problem(s.DNSNames, now)
			if reason == "" {
				return old, nil
			}
		}
		if attempt > 0 {
			// Another replica wrote the Secret between our read and write,
			// and what it wrote is still not usable: give up until next time.
			return nil, wrap(fmt.Errorf("changed concurrently and still unusable (%s)", reason))
		}

		log.Info("generating a new webhook serving certificate", "reason", reason)
		b, err := generate(s.DNSNames, now, s.validity(), old.previousCA(now))
		if err != nil {
			return nil, wrap(err)
		}
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		secret.Data[CertFile] = b.cert
		secret.Data[KeyFile] = b.key
		secret.Data[CAFile] = b.ca
		if found {
			err = s.Client.Update(ctx, &secret) // resourceVersion from the read: optimistic lock
		} else {
			secret.ObjectMeta = metav1.ObjectMeta{Namespace: s.Namespace, Name: s.SecretName}
			secret.Type = corev1.SecretTypeTLS
			err = s.Client.Create(ctx, &secret)
		}
		switch {
		case err == nil:
			return b, nil
		case apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err):
			log.Info("another replica wrote the webhook certificate Secret first; using its content")
		default:
			return nil, wrap(err)
		}
	}
}

// injectCABundle sets ca as the caBundle of every webhook in the named
// configurations, updating only those that differ. A configuration that does
// not exist (yet) is logged and skipped.
func (s *SelfSigned) injectCABundle(ctx context.Context, ca []byte) error {
	log := logf.FromContext(ctx)
	var errs []error
	for _, name := range s.WebhookConfigurations {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cfg admissionregistrationv1.ValidatingWebhookConfiguration
			if err := s.Client.Get(ctx, client.ObjectKey{Name: name}, &cfg); err != nil {
				return err
			}
			changed := false
			for i := range cfg.Webhooks {
				if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, ca) {
					cfg.Webhooks[i].ClientConfig.CABundle = ca
					changed = true
				}
			}
			if !changed {
				return nil
			}
			log.Info("injecting the webhook CA bundle", "validatingWebhookConfiguration", name)
			return s.Client.Update(ctx, &cfg)
		})
		switch {
		case apierrors.IsNotFound(err):
			log.Info("ValidatingWebhookConfiguration not found; not injecting its CA bundle yet", "name", name)
		case err != nil:
			errs = append(errs, fmt.Errorf("ValidatingWebhookConfiguration %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// CertFilesPresent reports whether dir holds a non-empty tls.crt and tls.key,
// i.e. a certificate was mounted and the self-signed fallback is not needed.
func CertFilesPresent(dir string) bool {
	for _, name := range []string{CertFile, KeyFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
			return false
		}
	}
	return true
}

// writeFiles writes the key and certificate into dir, each only if it differs.
func writeFiles(dir string, b *bundle) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// The key first: until the certificate follows, the pair on disk does not
	// match, which certwatcher rejects while keeping the old pair; it reloads
	// when the certificate's rename arrives.
	if err := writeFileAtomic(filepath.Join(dir, KeyFile), b.key, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, CertFile), b.cert, 0o644)
}

// writeFileAtomic replaces path with data via a temporary file and a rename,
// so a reader never sees a partial file. It does nothing if path already
// holds data.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
