package watchtest

import (
	"fmt"
	"slices"
)

// payloadFiles is how many files a Payload holds.
const payloadFiles = 5

// Payload is the files of generation gen of a payload whose every file
// names its generation: a read that mixes two generations, or misses a
// file, is told by PayloadGeneration.
func Payload(gen int) map[string]string {
	files := map[string]string{}
	for i := range payloadFiles {
		files[fmt.Sprintf("f%d.yaml", i)] = fmt.Sprintf("generation: %d\nfile: %d\n", gen, i)
	}
	return files
}

// PayloadGeneration returns the generation every file of a read of a
// Payload names (files: each file's name and data), or an error when they
// disagree or one is missing: a torn read.
func PayloadGeneration(files map[string][]byte) (int, error) {
	gen := -1
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for name := range files {
			if !yield(name) {
				return
			}
		}
	}) {
		var n, i int
		if _, err := fmt.Sscanf(string(files[name]), "generation: %d\nfile: %d\n", &n, &i); err != nil {
			return 0, fmt.Errorf("%s: %q: %v", name, files[name], err)
		}
		if gen >= 0 && n != gen {
			return 0, fmt.Errorf("torn snapshot: %s is generation %d, an earlier file %d", name, n, gen)
		}
		gen = n
	}
	if len(files) != payloadFiles {
		return 0, fmt.Errorf("torn snapshot: %d files", len(files))
	}
	return gen, nil
}
