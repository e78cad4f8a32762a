package httpserve_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/httpserve"
	"github.com/stratacfg/strata/internal/httpserve/httpservetest"
)

func ok(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }

// TestSiege holds more idle and half-sent connections than MaxConns
// against a plain and a TLS server: a probe still gets in, and the oldest
// held connections are closed to make room.
func TestSiege(t *testing.T) {
	t.Parallel()
	for _, tlsOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%t", tlsOn), func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv, bounded := httpserve.New(http.HandlerFunc(ok), ln)
			defer srv.Close()
			var client *tls.Config
			if tlsOn {
				ts := httptest.NewUnstartedServer(nil) // for its certificate
				ts.StartTLS()
				srv.TLSConfig = ts.TLS.Clone()
				srv.TLSConfig.NextProtos = nil // as the examples give it: ServeTLS would add h2
				client = ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
				ts.Close()
				go srv.ServeTLS(bounded, "", "")
			} else {
				go srv.Serve(bounded)
			}
			httpservetest.Siege(t, ln.Addr().String(), client, "/healthz", http.StatusOK)
			if tlsOn {
				// A client that offers HTTP/2 gets HTTP/1.1.
				h2 := client.Clone()
				h2.NextProtos = []string{"h2", "http/1.1"}
				c, err := tls.Dial("tcp", ln.Addr().String(), h2)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if p := c.ConnectionState().NegotiatedProtocol; p == "h2" {
					t.Errorf("negotiated %s", p)
				}
			}
		})
	}
}

// TestDeadlines closes an idle connection, half a request header and a
// body that never comes, each after its own deadline.
func TestDeadlines(t *testing.T) {
	t.Parallel()
	l := httpserve.DefaultLimits
	l.IdleTimeout, l.ReadHeaderTimeout, l.ReadTimeout = 100*time.Millisecond, 100*time.Millisecond, 200*time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, bounded := l.New(http.HandlerFunc(ok), ln)
	defer srv.Close()
	go srv.Serve(bounded)
	for name, send := range map[string]string{
		"idle":      "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"half":      "GET / HTTP/1.1\r\nHost: x\r\nX-Half:",
		"no body":   "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{",
		"no header": "",
	} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, send)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: the server kept the connection for 10s", name)
		}
	}
}
