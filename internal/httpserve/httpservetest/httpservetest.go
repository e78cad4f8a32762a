// Package httpservetest checks that a running server keeps
// httpserve.DefaultLimits: a client holding more connections than it
// allows, idle or half-sent, neither keeps a probe out nor keeps them all.
package httpservetest

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/httpserve"
)

// Siege holds connections against the server at addr (TLS with
// tlsConfig, plain when nil) and then requests path as a probe would:
//
//  1. a third of the connections send a whole GET of path, read the reply
//     and stay open, idle; a third send half a request header; a third
//     send a GET that announces a body and never send it; together they
//     pass MaxConns;
//  2. a new connection GETs path: it must be answered with want;
//  3. the server must have closed at least as many of the held
//     connections as took it past MaxConns.
func Siege(t testing.TB, addr string, tlsConfig *tls.Config, path string, want int) {
	t.Helper()
	const each = 30 // three kinds: 90 connections against 64
	max := httpserve.DefaultLimits.MaxConns
	if 3*each <= max {
		t.Fatalf("httpservetest: %d connections do not pass MaxConns %d", 3*each, max)
	}
	dial := func() net.Conn {
		t.Helper()
		var c net.Conn
		var err error
		if tlsConfig != nil {
			c, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, tlsConfig)
		} else {
			c, err = net.DialTimeout("tcp", addr, 5*time.Second)
		}
		if err != nil {
			t.Fatalf("httpservetest: dial %s: %v", addr, err)
		}
		return c
	}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	// (1)
	for range each {
		c := dial()
		held = append(held, c)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("httpservetest: a whole GET %s on a held connection: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range each {
		c := dial()
		held = append(held, c)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nX-Half:", path, addr)
	}
	for range each {
		c := dial()
		held = append(held, c)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n{", path, addr)
	}
	// (2)
	probe := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true}}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	resp, err := probe.Get(scheme + "://" + addr + path)
	if err != nil {
		t.Fatalf("httpservetest: a probe of %s behind %d held connections: %v", path, len(held), err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Errorf("httpservetest: a probe of %s behind %d held connections: %d, want %d", path, len(held), resp.StatusCode, want)
	}
	// (3)
	var closed sync.WaitGroup
	var mu sync.Mutex
	ended := 0
	deadline := time.Now().Add(2 * time.Second)
	for _, c := range held {
		closed.Go(func() {
			c.SetReadDeadline(deadline)
			_, err := io.Copy(io.Discard, c)
			if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
				mu.Lock()
				ended++
				mu.Unlock()
			}
		})
	}
	closed.Wait()
	if least := len(held) + 1 - max; ended < least {
		t.Errorf("httpservetest: the server closed %d of %d held connections, want at least %d: it keeps more than %d open", ended, len(held), least, max)
	}
}

// Trusting returns a client's TLS configuration that trusts the
// certificate in the PEM file certFile, a command's self-signed serving
// certificate, for Siege.
func Trusting(t testing.TB, certFile string) *tls.Config {
	t.Helper()
	cert, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cert) {
		t.Fatalf("httpservetest: no certificate in %s", certFile)
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}
