// Package kubetest runs a real etcd and kube-apiserver on loopback for
// integration tests. The binaries are the ones `make tools` builds from
// hack/tools into bin/; a test that cannot find or start them fails and says
// why, it never skips.
package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stratacfg/strata/internal/watchtest"
)

// startTimeout bounds how long a server may take to become ready.
const startTimeout = 90 * time.Second

// token is the bearer token of the cluster administrator (group
// system:masters) the static token file declares.
const token = "strata-test-admin-token"

// Server is an etcd and a kube-apiserver, both on loopback, with their data
// in a temporary directory.
type Server struct {
	// Config reaches the API server as the cluster administrator.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for the same user, for
	// kubectl and example binaries.
	Kubeconfig string

	apiserver string
	args      []string
	etcdBin   string
	etcdURL   string
	peerURL   string
	mu        sync.Mutex
	cmd       *exec.Cmd
	exited    chan struct{}
	etcd      *exec.Cmd
	etcdExit  chan struct{}
	log       *os.File
}

// Main starts the servers for a test binary, runs its tests with *server
// set, and stops the servers. A TestMain calls os.Exit(kubetest.Main(m,
// &server)). When the servers cannot start, no test runs and the binary
// fails with the reason.
func Main(m interface{ Run() int }, server **Server) int {
	root, err := watchtest.FindRepoRoot()
	if err == nil {
		dir, derr := os.MkdirTemp("", "strata-kubetest-")
		if derr != nil {
			err = derr
		} else {
			defer os.RemoveAll(dir)
			*server, err = start(tool(root, "etcd"), tool(root, "kube-apiserver"), dir)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubetest: cannot start etcd and kube-apiserver: %v\n", err)
		return 1
	}
	defer (*server).Stop()
	return m.Run()
}

// MainWithCommand is Main for the tests of a command: it first builds the
// command in pkg (as go build names a package) into a temporary file
// name, and sets *bin to its path. A command that does not build fails
// the binary with go build's output.
func MainWithCommand(m interface{ Run() int }, server **Server, pkg, name string, bin *string) int {
	dir, err := os.MkdirTemp("", "strata-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", *bin, pkg).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the %s command: %v\n%s", name, err, out)
		return 1
	}
	return Main(m, server)
}

func tool(root, name string) string { return filepath.Join(root, "bin", name) }

// Start starts etcd and kube-apiserver for one test, and stops them when
// the test ends; apiserverArgs are more flags for kube-apiserver (a
// feature gate, an admission configuration file).
func Start(tb testing.TB, apiserverArgs ...string) *Server {
	tb.Helper()
	s, err := start(watchtest.Tool(tb, "etcd"), watchtest.Tool(tb, "kube-apiserver"), tb.TempDir(), apiserverArgs...)
	if err != nil {
		tb.Fatalf("kubetest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

func start(etcdBin, apiserverBin, dir string, extra ...string) (*Server, error) {
	for _, bin := range []string{etcdBin, apiserverBin} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("%s is missing (%v); `make tools` builds it from hack/tools", bin, err)
		}
	}
	s := &Server{apiserver: apiserverBin}
	log, err := os.Create(filepath.Join(dir, "servers.log"))
	if err != nil {
		return nil, err
	}
	s.log = log
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	s.etcdBin = etcdBin
	s.etcdURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
	s.peerURL = "http://127.0.0.1:" + strconv.Itoa(ports[1])
	etcdURL := s.etcdURL
	if err := s.startEtcd(filepath.Join(dir, "etcd")); err != nil {
		return nil, err
	}

	key := filepath.Join(dir, "sa.key")
	if err := writeKey(key); err != nil {
		s.Stop()
		return nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+`,admin,admin-uid,"system:masters"`+"\n"), 0o600); err != nil {
		s.Stop()
		return nil, err
	}
	certDir := filepath.Join(dir, "certs")
	port := strconv.Itoa(ports[2])
	s.args = []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// Since v1.37 the endpoint reconciler refuses a loopback address:
		// nothing here reaches the API server through the kubernetes
		// Service, so none is kept.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + port,
		"--cert-dir=" + certDir,
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + key,
		"--service-account-signing-key-file=" + key,
		"--service-cluster-ip-range=10.96.0.0/24",
		"--disable-admission-plugins=ServiceAccount",
		"--enable-priority-and-fairness=false",
		"--v=0",
	}
	s.args = append(s.args, extra...)
	if err := s.startAPIServer(); err != nil {
		s.Stop()
		return nil, err
	}
	s.Config = &rest.Config{
		Host:            "https://127.0.0.1:" + port,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(certDir, "apiserver.crt")},
		QPS:             -1, // no client-side rate limit: tests measure the server
	}
	if err := s.waitReady(); err != nil {
		s.Stop()
		return nil, err
	}
	s.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(s.Kubeconfig, []byte(kubeconfig(s.Config)), 0o600); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) startAPIServer() error {
	cmd := exec.Command(s.apiserver, s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return nil
}

// waitReady waits for /readyz to answer ok, asking every 100 ms (the
// server announces readiness only there), or for either server to exit.
func (s *Server) waitReady() error {
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	var last error
	for {
		if _, err := os.Stat(s.Config.TLSClientConfig.CAFile); err == nil {
			if last = s.ready(); last == nil {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("kube-apiserver exited before it was ready; its log:\n%s", s.tail())
		case <-s.etcdExit:
			return fmt.Errorf("etcd exited; the servers' log:\n%s", s.tail())
		case <-deadline.C:
			return fmt.Errorf("kube-apiserver not ready after %s (last error: %v); the servers' log:\n%s", startTimeout, last, s.tail())
		case <-tick.C:
		}
	}
}

func (s *Server) ready() error {
	c, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s", err, body)
	}
	// The default namespace appears shortly after readiness; tests
	// create objects at once.
	_, err = c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	return err
}

// Client returns a clientset for the administrator.
func (s *Server) Client(tb testing.TB) kubernetes.Interface {
	tb.Helper()
	c, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// StopAPIServer stops kube-apiserver, leaving etcd running, as an apiserver
// restart or an outage does: SIGTERM, then SIGKILL after five seconds.
func (s *Server) StopAPIServer() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		// Open watches hold a graceful shutdown up to a minute; an
		// outage does not wait for them either.
		_ = cmd.Process.Kill()
		<-exited
	}
}

// StartAPIServer starts kube-apiserver again, on the same port and data,
// and waits until it is ready.
func (s *Server) StartAPIServer(tb testing.TB) {
	tb.Helper()
	if err := s.startAPIServer(); err != nil {
		tb.Fatalf("kubetest: %v", err)
	}
	if err := s.waitReady(); err != nil {
		tb.Fatalf("kubetest: %v", err)
	}
}

// startEtcd starts etcd on data directory dir.
func (s *Server) startEtcd(dir string) error {
	s.etcd = exec.Command(s.etcdBin,
		"--name=strata-test",
		"--data-dir="+dir,
		"--listen-client-urls="+s.etcdURL,
		"--advertise-client-urls="+s.etcdURL,
		"--listen-peer-urls="+s.peerURL,
		"--initial-advertise-peer-urls="+s.peerURL,
		"--initial-cluster=strata-test="+s.peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	s.etcd.Stdout, s.etcd.Stderr = s.log, s.log
	if err := s.etcd.Start(); err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	exited := make(chan struct{})
	s.etcdExit = exited
	cmd := s.etcd
	go func() { _ = cmd.Wait(); close(exited) }()
	return nil
}

// stopEtcd stops etcd: SIGTERM, then SIGKILL after 30 seconds.
func (s *Server) stopEtcd() {
	if s.etcd == nil || s.etcd.Process == nil {
		return
	}
	_ = s.etcd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.etcdExit:
	case <-time.After(30 * time.Second):
		_ = s.etcd.Process.Kill()
		<-s.etcdExit
	}
}

// SnapshotEtcd saves a snapshot of the running etcd with etcdctl, as an
// operator's backup does, and returns the file's path.
func (s *Server) SnapshotEtcd(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "etcd-snapshot.db")
	cmd := exec.Command(watchtest.Tool(tb, "etcdctl"), "--endpoints="+s.etcdURL, "snapshot", "save", path)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("kubetest: etcdctl snapshot save: %v\n%s", err, out)
	}
	return path
}

// RestoreEtcd restores etcd from snapshot as an operator does: it stops
// kube-apiserver and etcd, restores the snapshot with etcdutl into a new
// data directory (args go to etcdutl snapshot restore, such as
// --bump-revision), starts etcd on it and kube-apiserver again. Without
// args, the server's resource versions go back to the snapshot's.
func (s *Server) RestoreEtcd(tb testing.TB, snapshot string, args ...string) {
	tb.Helper()
	s.StopAPIServer()
	s.stopEtcd()
	dir := filepath.Join(tb.TempDir(), "etcd-restored")
	restore := append([]string{"snapshot", "restore", snapshot, "--data-dir=" + dir, "--name=strata-test",
		"--initial-cluster=strata-test=" + s.peerURL, "--initial-advertise-peer-urls=" + s.peerURL}, args...)
	if out, err := exec.Command(watchtest.Tool(tb, "etcdutl"), restore...).CombinedOutput(); err != nil {
		tb.Fatalf("kubetest: etcdutl snapshot restore: %v\n%s", err, out)
	}
	if err := s.startEtcd(dir); err != nil {
		tb.Fatalf("kubetest: %v", err)
	}
	s.StartAPIServer(tb)
}

// Stop stops both servers.
func (s *Server) Stop() {
	s.StopAPIServer()
	s.stopEtcd()
	if s.log != nil {
		_ = s.log.Close()
	}
}

// tail returns the end of the servers' log.
func (s *Server) tail() string {
	data, err := os.ReadFile(s.log.Name())
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

func freePorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

func writeKey(path string) error {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

func kubeconfig(c *rest.Config) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: strata-test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: strata-test
  context: {cluster: strata-test, user: admin}
current-context: strata-test
`, c.Host, c.TLSClientConfig.CAFile, c.BearerToken)
}
