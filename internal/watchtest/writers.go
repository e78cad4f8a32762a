// Package watchtest drives the writers that publish mounted configuration,
// for tests: kubelet's own AtomicWriter (through the driver hack/tools
// builds) and an emulation of git-sync's link swap.
package watchtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// RepoRoot returns the root of the strata repository the test runs in: the
// nearest directory above the working directory whose go.mod declares the
// module github.com/stratacfg/strata.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// FindRepoRoot is RepoRoot for callers without a testing.TB, such as a
// TestMain.
func FindRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/stratacfg/strata\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("watchtest: not inside the strata repository (no go.mod of module github.com/stratacfg/strata above the working directory)")
		}
		dir = parent
	}
}

// Tool returns the path of a program `make tools` builds into bin/. The
// test fails, saying how to build it, when it is missing: tests that need a
// real writer never skip.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(RepoRoot(t), "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("watchtest: %s is missing (%v); `make tools` builds it from hack/tools", p, err)
	}
	return p
}

// KubeletWriter writes payloads into a directory with kubelet's AtomicWriter
// (k8s.io/kubernetes/pkg/volume/util), running in the atomicwriter driver
// that `make tools` builds. Unit tests use AtomicWriter, its steps in Go;
// internal/kubetest/volume checks the two against each other. It is not
// safe for concurrent use.
type KubeletWriter struct {
	Dir   string
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	stder *strings.Builder
}

// NewKubeletWriter starts a driver writing into dir, which must exist. The
// driver stops when the test ends.
func NewKubeletWriter(t testing.TB, dir string) *KubeletWriter {
	t.Helper()
	cmd := exec.Command(Tool(t, "atomicwriter"), "-dir", dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("watchtest: starting the AtomicWriter driver: %v", err)
	}
	k := &KubeletWriter{Dir: dir, cmd: cmd, in: in, out: bufio.NewScanner(out), stder: &stderr}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("watchtest: the AtomicWriter driver failed: %v: %s", err, stderr.String())
		}
	})
	return k
}

// Write publishes files (name → content) as the volume's whole payload and
// returns once AtomicWriter's Write has returned.
func (k *KubeletWriter) Write(t testing.TB, files map[string]string) {
	t.Helper()
	if err := k.TryWrite(files); err != nil {
		t.Fatal(err)
	}
}

// TryWrite is Write for goroutines other than the test's.
func (k *KubeletWriter) TryWrite(files map[string]string) error {
	return k.TryWriteBinary(files, nil)
}

// TryWriteBinary is TryWrite with files whose content is not text (gzip'd
// shards) beside the text ones.
func (k *KubeletWriter) TryWriteBinary(files map[string]string, binary map[string][]byte) error {
	line, err := json.Marshal(map[string]any{"files": files, "binary": binary})
	if err != nil {
		return err
	}
	if _, err := k.in.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("watchtest: writing to the AtomicWriter driver: %w (%s)", err, k.stder.String())
	}
	if !k.out.Scan() {
		return fmt.Errorf("watchtest: the AtomicWriter driver exited: %v (%s)", k.out.Err(), k.stder.String())
	}
	var r struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(k.out.Bytes(), &r); err != nil {
		return fmt.Errorf("watchtest: reply %q: %w", k.out.Text(), err)
	}
	if r.Error != "" {
		return fmt.Errorf("watchtest: AtomicWriter: %s", r.Error)
	}
	return nil
}

// GitSync publishes revisions the way git-sync v4 does
// (kubernetes/git-sync, cmd/git-sync/main.go: the worktree per revision
// under .worktrees, publishSymlink, and the removal of the previous
// worktree): each revision is a new directory, a temporary link to it is
// renamed over the published link, and the previous revision's directory is
// removed at once.
type GitSync struct {
	// Root holds the link and the worktrees.
	Root string
	// Link is the published link's name in Root.
	Link string
	rev  int
	prev string
}

// NewGitSync returns a writer publishing root/link.
func NewGitSync(root, link string) *GitSync { return &GitSync{Root: root, Link: link} }

// Path is the published link.
func (g *GitSync) Path() string { return filepath.Join(g.Root, g.Link) }

// Write publishes a revision holding files; a name may contain slashes.
func (g *GitSync) Write(files map[string]string) error { return g.WriteLinks(files, nil) }

// WriteLinks publishes a revision holding files and symbolic links, name
// → target, as a committer may have left them.
func (g *GitSync) WriteLinks(files, links map[string]string) error {
	g.rev++
	rel := filepath.Join(".worktrees", fmt.Sprintf("%040x", g.rev))
	wt := filepath.Join(g.Root, rel)
	if err := WriteTree(wt, files); err != nil {
		return err
	}
	// A worktree's .git file, as `git worktree add` leaves it, unless
	// files hold one: what marks the directory as a checkout.
	if _, err := os.Lstat(filepath.Join(wt, ".git")); err != nil {
		err = os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(g.Root, ".git", "worktrees", filepath.Base(wt))+"\n"), 0o644)
		if err != nil {
			return err
		}
	}
	for name, target := range links {
		p := filepath.Join(wt, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, p); err != nil {
			return err
		}
	}
	tmp := filepath.Join(g.Root, "tmp-link")
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, g.Path()); err != nil {
		return err
	}
	if g.prev != "" {
		if err := os.RemoveAll(g.prev); err != nil {
			return err
		}
	}
	g.prev = wt
	return nil
}

// WriteTree writes files into dir, name → content, creating dir and the
// directories a name (which may contain slashes) needs.
func WriteTree(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteFiles is WriteTree failing t on an error.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	if err := WriteTree(dir, files); err != nil {
		t.Fatal(err)
	}
}

// Buffer is an output a command under test writes to from its goroutines
// while the test reads it. The zero Buffer is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
