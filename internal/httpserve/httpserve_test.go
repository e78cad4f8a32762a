package httpserve_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
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

// smallSendBuffers gives each accepted connection a 4 KiB send buffer, as
// a kernel under TCP memory pressure does, so that a client that stops
// reading fills it in a few replies.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		c.(*net.TCPConn).SetWriteBuffer(4096)
	}
	return c, err
}

// TestEvictionDoesNotStallAccept: a TLS connection made room for is
// closed with a close_notify alert, which tls.Conn.Close writes with a 5 s
// deadline; when the client has stopped reading and the connection's
// send buffer is full, that write waits. Closed inside Accept, it keeps
// every new connection, a probe's included, waiting 5 s for each
// connection closed ("a probe always gets in").
func TestEvictionDoesNotStallAccept(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := httpserve.DefaultLimits
	l.MaxConns = 1
	reply := strings.Repeat("x", 1000)
	srv, bounded := l.New(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, reply) }), smallSendBuffers{ln})
	defer srv.Close()
	idle := make(chan struct{}, 1) // a connection went idle: a reply was written
	track := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		track(c, s)
		if s == http.StateIdle {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
	}
	ts := httptest.NewUnstartedServer(nil) // for its certificate
	ts.StartTLS()
	srv.TLSConfig = ts.TLS.Clone()
	srv.TLSConfig.NextProtos = nil
	client := ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	client.ServerName = "example.com"
	ts.Close()
	go srv.ServeTLS(bounded, "", "")
	dial := func() *tls.Conn {
		d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		tc := tls.Client(c, client)
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		return tc
	}
	// fill sends GETs, reading no reply, until one is not answered
	// (the server's write waits) or max were; it returns how many were.
	fill := func(c net.Conn, max int) int {
		for i := range max {
			select {
			case <-idle: // one left from an earlier connection
			default:
			}
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			select {
			case <-idle:
			case <-time.After(300 * time.Millisecond):
				return i
			}
		}
		return max
	}
	first := dial()
	n := fill(first, 10000) // the replies that fit: one more would wait
	first.Close()
	held := dial() // makes room: first, whose write waits, closes at once
	defer held.Close()
	if got := fill(held, n); got != n {
		t.Fatalf("%d replies fit the first connection's buffers, %d the second's: the test cannot fill them", n, got)
	}
	start := time.Now()
	probe := dial() // makes room: held, idle, its send buffer full
	defer probe.Close()
	fmt.Fprintf(probe, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	probe.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(probe), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a probe behind one idle connection whose send buffer is full (%d replies unread): answered after %v", n, took.Round(time.Millisecond))
	}
}
