package watch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratacfg/strata/watch"
)

// Settings is what the example loads.
type Settings struct {
	Replicas int `json:"replicas"`
}

// A watcher over a directory, such as a ConfigMap's mount: Load builds the
// value from the generation the watcher read; an error keeps the running
// value.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"replicas": 3}`), 0o644)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := watch.New(watch.Options[*Settings]{
		Paths: []string{dir}, // a mount: kubelet swaps ..data, git-sync a root link
		Load: func(_ context.Context, c *watch.Contents) (*Settings, error) {
			data, err := c.ReadFile(filepath.Join(dir, "settings.json")) // from one generation
			if err != nil {
				return nil, err
			}
			var s Settings
			if err := json.Unmarshal(data, &s); err != nil {
				return nil, fmt.Errorf("settings.json: %w", err)
			}
			if s.Replicas < 1 {
				return nil, fmt.Errorf("settings.json: replicas must be at least 1, not %d", s.Replicas)
			}
			return &s, nil
		},
	})
	if err == nil {
		err = w.Start(ctx) // refuses an invalid initial configuration
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("replicas:", w.Current().Replicas) // lock-free, from any goroutine
	// Output:
	// replicas: 3
}
