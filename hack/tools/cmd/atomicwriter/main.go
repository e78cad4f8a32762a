// Command atomicwriter writes ConfigMap-style volume payloads into a directory
// with kubelet's own AtomicWriter (k8s.io/kubernetes/pkg/volume/util), so that
// strata's watcher is tested against the writer it meets in a real pod.
//
// Two modes:
//
//	atomicwriter -dir DIR -from SRC
//	    writes every regular file directly inside SRC as one payload, once.
//
//	atomicwriter -dir DIR
//	    reads one JSON object per line on stdin, {"files":{"name":"content",...}},
//	    with "binary":{"name":"base64",...} for content that is not text,
//	    writes each as a payload and answers with one line per request on
//	    stdout, {"seq":N} or {"seq":N,"error":"..."}, after Write has returned.
//	    A test can therefore time from the moment an update is complete.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

type request struct {
	Files map[string]string `json:"files"`
	// Binary are files whose content is not text (gzip'd), base64 in
	// JSON.
	Binary map[string][]byte `json:"binary"`
}

type reply struct {
	Seq   int    `json:"seq"`
	Error string `json:"error,omitempty"`
}

func main() {
	dir := flag.String("dir", "", "target directory (must exist)")
	from := flag.String("from", "", "write the regular files of this directory once, then exit")
	flag.Parse()
	if err := run(*dir, *from, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "atomicwriter:", err)
		os.Exit(1)
	}
}

func run(dir, from string, in io.Reader, out io.Writer) error {
	if dir == "" {
		return errors.New("-dir is required")
	}
	writer, err := volumeutil.NewAtomicWriter(dir, "atomicwriter")
	if err != nil {
		return err
	}
	if from != "" {
		payload, err := payloadFrom(from)
		if err != nil {
			return err
		}
		return writer.Write(payload, nil)
	}

	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	encoder := json.NewEncoder(out)
	for seq := 1; scanner.Scan(); seq++ {
		var req request
		r := reply{Seq: seq}
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			r.Error = fmt.Sprintf("request %d: %v", seq, err)
		} else if err := writer.Write(toPayload(req.Files, req.Binary), nil); err != nil {
			r.Error = err.Error()
		}
		if err := encoder.Encode(r); err != nil {
			return err
		}
	}
	return scanner.Err()
}

func toPayload(files map[string]string, binary map[string][]byte) map[string]volumeutil.FileProjection {
	payload := make(map[string]volumeutil.FileProjection, len(files)+len(binary))
	for name, content := range files {
		payload[name] = volumeutil.FileProjection{Data: []byte(content), Mode: 0o644}
	}
	for name, content := range binary {
		payload[name] = volumeutil.FileProjection{Data: content, Mode: 0o644}
	}
	return payload
}

func payloadFrom(src string) (map[string]volumeutil.FileProjection, error) {
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, err
	}
	payload := make(map[string]volumeutil.FileProjection, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return nil, err
		}
		payload[e.Name()] = volumeutil.FileProjection{Data: data, Mode: 0o644}
	}
	return payload, nil
}
