// The member's control file (format and guarantees: conformance/members/control.py), shared by the
// Go harnesses: conformance/go_install.py compiles this directory's files into every Go harness.

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// controlCommand is one line of the control file.
type controlCommand struct {
	Seq    *int64   `json:"seq"`
	Op     string   `json:"op"`
	Ms     *int64   `json:"ms"`
	Topics []string `json:"topics"`
}

// controlReader returns the commands appended since this incarnation started.
type controlReader struct {
	path   string
	offset int64
}

func newControlReader(path *string) *controlReader {
	r := &controlReader{}
	if path == nil || *path == "" {
		return r
	}
	r.path = *path
	if st, err := os.Stat(r.path); err == nil {
		r.offset = st.Size()
	}
	return r
}

// lines returns the complete lines appended since the last call.
func (r *controlReader) lines() [][]byte {
	if r.path == "" {
		return nil
	}
	f, err := os.Open(r.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(r.offset, io.SeekStart); err != nil {
		return nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil
	}
	r.offset += int64(end + 1)
	var out [][]byte
	for _, line := range bytes.Split(data[:end], []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// sleepUnlessStopped sleeps ms milliseconds, or until stop is closed.
func sleepUnlessStopped(ms int64, stop <-chan struct{}) {
	select {
	case <-stop:
	case <-time.After(time.Duration(ms) * time.Millisecond):
	}
}

// serveControl applies every new command in order: it records a `control` event, then calls stall
// (which keeps the application from the client for ms: sleepUnlessStopped, where the harness's
// application is its poll loop) or subscribe (which changes the subscription in place). A line that
// is no command, or a subscribe the client refuses, is a non-fatal `error` event.
func serveControl(r *controlReader, record func(string, map[string]any), stall func(ms int64),
	subscribe func([]string) error) {
	for _, line := range r.lines() {
		var cmd controlCommand
		err := json.Unmarshal(line, &cmd)
		switch {
		case err == nil && cmd.Seq != nil && cmd.Op == "stall" && cmd.Ms != nil:
			record("control", map[string]any{"seq": *cmd.Seq, "op": "stall", "ms": *cmd.Ms})
			stall(*cmd.Ms)
		case err == nil && cmd.Seq != nil && cmd.Op == "subscribe" && cmd.Topics != nil:
			record("control", map[string]any{"seq": *cmd.Seq, "op": "subscribe", "topics": cmd.Topics})
			if err := subscribe(cmd.Topics); err != nil {
				record("error", map[string]any{"error": fmt.Sprintf("control %d: subscribe %v failed: %v",
					*cmd.Seq, cmd.Topics, err), "fatal": false})
			}
		default:
			record("error", map[string]any{"error": "control: not a command: " + string(line), "fatal": false})
		}
	}
}
