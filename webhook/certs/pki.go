package certs

import (
	"bytes"
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
	"time"

	corev1 "k8s.io/api/core/v1"
)

// clockSkew back-dates NotBefore so a peer whose clock is slightly behind
// still accepts a certificate issued a moment ago.
const clockSkew = time.Minute

// bundle is the PEM content of the Secret: the serving certificate and its
// key, and the CA bundle (the issuing CA first, then possibly the previous one).
type bundle struct {
	cert, key, ca []byte
}

func fromSecret(s *corev1.Secret) *bundle {
	return &bundle{cert: s.Data[CertFile], key: s.Data[KeyFile], ca: s.Data[CAFile]}
}

// problem says why b cannot be used as is for names at now, or "" if it can:
// unparsable, key not matching, not issued by ca.crt, not covering every
// name, expired, or in the last third of its lifetime (due for rotation).
func (b *bundle) problem(names []string, now time.Time) string {
	pair, err := tls.X509KeyPair(b.cert, b.key)
	if err != nil {
		return fmt.Sprintf("invalid %s/%s: %v", CertFile, KeyFile, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Sprintf("invalid %s: %v", CertFile, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b.ca) {
		return fmt.Sprintf("%s holds no certificate", CAFile)
	}
	for _, name := range names {
		_, err := leaf.Verify(x509.VerifyOptions{
			DNSName:     name, // an IP address is matched against the IP SANs
			Roots:       roots,
			CurrentTime: now,
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			return fmt.Sprintf("%s does not verify for %q against %s: %v", CertFile, name, CAFile, err)
		}
	}
	lifetime := leaf.NotAfter.Sub(leaf.NotBefore)
	if renewAt := leaf.NotBefore.Add(lifetime / 3 * 2); now.After(renewAt) {
		return fmt.Sprintf("due for rotation since %s (expires %s)", renewAt.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return ""
}

// previousCA returns, PEM-encoded, the CA that issued b's certificate (the
// first in ca.crt) if it is still valid at now, so that it stays trusted
// while replicas move to a new certificate; nil otherwise.
func (b *bundle) previousCA(now time.Time) []byte {
	if b == nil {
		return nil
	}
	block, _ := pem.Decode(b.ca)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !ca.IsCA || now.After(ca.NotAfter) {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
}

// generate makes a new CA, valid twice as long as the serving certificate so
// it outlives every certificate it signs by at least a rotation, and a
// serving certificate for names signed by it. The CA's key is discarded.
func generate(names []string, now time.Time, validity time.Duration, previousCA []byte) (*bundle, error) {
	var dnsNames []string
	var ips []net.IP
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			ips = append(ips, ip)
		} else {
			dnsNames = append(dnsNames, n)
		}
	}
	notBefore := now.Add(-clockSkew)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	caSerial, err := serial()
	if err != nil {
		return nil, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("ndp-webhook-ca@%d", now.Unix())},
		NotBefore:             notBefore,
		NotAfter:              now.Add(validity).Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // signs serving certificates only
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parsing the new CA certificate: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the serving key: %w", err)
	}
	leafSerial, err := serial()
	if err != nil {
		return nil, err
	}
	leafTemplate := &x509.Certificate{
		SerialNumber:          leafSerial,
		Subject:               pkix.Name{CommonName: names[0]},
		DNSNames:              dnsNames,
		IPAddresses:           ips,
		NotBefore:             notBefore,
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTemplate, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating the serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the serving key: %w", err)
	}

	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return &bundle{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		ca:   bytes.Join([][]byte{caPEM, previousCA}, nil),
	}, nil
}

// serial returns a random 128-bit certificate serial number.
func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return n, nil
}
