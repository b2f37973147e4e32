package grayproxy

import (
	"crypto"
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
)

// certLifetime is how long the CA and the serving certificates are valid:
// longer than any test or benchmark run.
const certLifetime = 30 * 24 * time.Hour

// CA is a certificate authority that signs the proxies' serving
// certificates. A kubeconfig that trusts its PEM trusts every proxy it
// signs for. Several proxies may share one.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  []byte
}

// NewCA generates a CA (an ECDSA P-256 key, kept in memory only).
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("grayproxy: CA key: %w", err)
	}
	tmpl, err := template("grayproxy CA")
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("grayproxy: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("grayproxy: CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// PEM is the CA's certificate, PEM-encoded: a kubeconfig's
// certificate-authority-data.
func (ca *CA) PEM() []byte { return append([]byte(nil), ca.pem...) }

// serving returns a new serving certificate for 127.0.0.1 and localhost,
// signed by ca.
func (ca *CA) serving() (tls.Certificate, error) {
	return ca.sign("grayproxy", nil, x509.ExtKeyUsageServerAuth)
}

// sign returns a new certificate (and key) for common name cn and
// organizations orgs, for usage, signed by ca; a serving certificate is
// for 127.0.0.1 and localhost.
func (ca *CA) sign(cn string, orgs []string, usage x509.ExtKeyUsage) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("grayproxy: key: %w", err)
	}
	tmpl, err := template(cn)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl.Subject.Organization = orgs
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("grayproxy: certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}, nil
}

// template is a certificate template named cn with a random serial,
// valid from an hour ago (clock skew) for certLifetime.
func template(cn string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("grayproxy: serial: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certLifetime)}, nil
}
