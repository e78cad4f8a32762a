// Package servingcert gives the example servers a serving certificate for
// their admission webhooks: a self-signed one, written once into a
// directory and kept there, which is its own CA bundle.
package servingcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/stratacfg/strata/internal/files"
)

// The serving certificate's files in its directory.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// Ensure returns the PEM of the serving certificate in dir, first writing
// a self-signed one for host when dir holds none that serves host now:
// none at all, a certificate for another host, one expired or expiring
// within a day, or a pair torn by a crash (a certificate without its key,
// or not of it). org names its owner. The certificate is its own CA: its
// PEM is the webhook's CA bundle. Each file is replaced whole, the key
// readable by its owner alone.
func Ensure(dir, host, org string) ([]byte, error) {
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	now := time.Now()
	if cert, ok := serves(certPath, keyPath, host, now); ok {
		return cert, nil
	}
	certPEM, keyPEM, err := selfSigned(host, org, now)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// The key first: a crash between the two leaves a certificate that
	// is not of the key, which the next Ensure replaces.
	if err := files.Replace(keyPath, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := files.Replace(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	return certPEM, nil
}

// serves returns the certificate at certPath when it and the key at
// keyPath are a pair that serves host from now until a day after.
func serves(certPath, keyPath, host string, now time.Time) ([]byte, bool) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, false
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, false
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil || pair.Leaf == nil {
		return nil, false
	}
	c := pair.Leaf
	if c.VerifyHostname(host) != nil || now.Before(c.NotBefore) || now.Add(24*time.Hour).After(c.NotAfter) {
		return nil, false
	}
	return certPEM, true
}

// selfSigned returns a certificate and its key, PEM-encoded, for host (an
// IP address or a DNS name), valid for a year from now.
func selfSigned(host, org string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: host, Organization: []string{org}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
