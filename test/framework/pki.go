package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the cluster's: a CA, the API server's serving certificate, the
// service-account signing key, and static tokens for the admin, each
// kubelet (system:node:<name> in system:nodes: the Node authorizer and
// NodeRestriction apply; kubeadm would bootstrap a client certificate,
// which adds nothing to what ndp is checked for here) and the worker VMs'
// kube-proxy (system:kube-proxy, bound to system:node-proxier by default).
type pki struct {
	dir                    string
	adminToken, proxyToken string
	// nodeTokens holds each node's token, by node name.
	nodeTokens map[string]string
}

func newPKI(dir string, nodes []string, ips []net.IP) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir, adminToken: rand.Text(), proxyToken: rand.Text(), nodeTokens: map[string]string{}}
	tokens := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n%s,system:kube-proxy,system:kube-proxy\n", p.adminToken, p.proxyToken)
	for _, n := range nodes {
		p.nodeTokens[n] = rand.Text()
		tokens += fmt.Sprintf("%s,system:node:%s,%s,\"system:nodes\"\n", p.nodeTokens[n], n, n)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ndp-cluster-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: ips,
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	// The service-account key is RSA: every Kubernetes version accepts it.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	srvKeyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"ca.crt":        pemBlock("CERTIFICATE", caDER),
		"apiserver.crt": pemBlock("CERTIFICATE", srvDER),
		"apiserver.key": pemBlock("EC PRIVATE KEY", srvKeyDER),
		"sa.key":        pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)),
		"sa.pub":        pemBlock("PUBLIC KEY", saPub),
		"tokens.csv":    []byte(tokens),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// kubeconfig writes a kubeconfig for server with a token, and returns its path.
func (p *pki) kubeconfig(name, server, token string) (string, error) {
	path := filepath.Join(p.dir, name+".kubeconfig")
	return path, os.WriteFile(path, []byte(kubeconfigText(server, p.path("ca.crt"), name, token)), 0o600)
}

// kubeconfigText is a kubeconfig for server (its CA at caPath) as user,
// with a bearer token.
func kubeconfigText(server, caPath, user, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: ndp-cluster
  cluster: {server: %q, certificate-authority: %q}
users:
- name: %s
  user: {token: %q}
contexts:
- name: %s
  context: {cluster: ndp-cluster, user: %s}
current-context: %s
`, server, caPath, user, token, user, user, user)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
