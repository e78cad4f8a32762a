package servingcert

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	if b == nil {
		t.Fatalf("no PEM block in %q", certPEM)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEnsureKeepsTheKeyPrivate: the key is written 0600 even when a file
// of that name was left there, world-readable, without a certificate.
func TestEnsureKeepsTheKeyPrivate(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, KeyFile)
	if err := os.WriteFile(key, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(dir, "127.0.0.1", "test"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("the new private key is %v, want 0600", st.Mode().Perm())
	}
}

// TestEnsureGivesACertificateForHost: the certificate Ensure returns
// serves host, whatever an earlier run for another host left in dir.
func TestEnsureGivesACertificateForHost(t *testing.T) {
	dir := t.TempDir()
	if _, err := Ensure(dir, "127.0.0.1", "test"); err != nil {
		t.Fatal(err)
	}
	got, err := Ensure(dir, "webhook.example.dev", "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := parse(t, got).VerifyHostname("webhook.example.dev"); err != nil {
		t.Errorf("Ensure for webhook.example.dev returned a certificate that does not serve it: %v", err)
	}
}

// TestEnsureReplacesAnExpiredCertificate: a certificate past its NotAfter
// (it is valid a year) is not returned as the serving certificate.
func TestEnsureReplacesAnExpiredCertificate(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := selfSigned("127.0.0.1", "test", time.Now().Add(-2*365*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CertFile), certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Ensure(dir, "127.0.0.1", "test")
	if err != nil {
		t.Fatal(err)
	}
	if c := parse(t, got); time.Now().After(c.NotAfter) {
		t.Errorf("Ensure returned a certificate that expired at %s", c.NotAfter)
	}
}

// TestEnsureDoesNotReturnATornCertificate: a tls.crt left empty (Ensure
// writes it with os.WriteFile, truncating first, so a crash can leave it
// so) is not returned as the CA bundle with no error.
func TestEnsureDoesNotReturnATornCertificate(t *testing.T) {
	dir := t.TempDir()
	if _, err := Ensure(dir, "127.0.0.1", "test"); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, CertFile), 0); err != nil {
		t.Fatal(err)
	}
	got, err := Ensure(dir, "127.0.0.1", "test")
	if err == nil && len(got) == 0 {
		t.Errorf("Ensure returned an empty CA bundle and no error")
	}
}
