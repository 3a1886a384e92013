package main

import (
	"bytes"
	"log/slog"
	"sync"
)

// warnKeep is how many of a node's last warning lines a warnLog keeps.
const warnKeep = 20

// warnLog keeps the last warnKeep lines a node logged at level Warn or
// above (a member process's stderr, or the harness's own nodes): a
// failed row reports them, so a lost connection says which side closed
// it and why.
type warnLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
}

// Write takes log output; each whole line is kept.
func (w *warnLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.lines = append(w.lines, string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	if len(w.lines) > warnKeep {
		w.lines = append(w.lines[:0], w.lines[len(w.lines)-warnKeep:]...)
	}
	return len(p), nil
}

// take returns the lines kept and forgets them.
func (w *warnLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.lines
	w.lines = nil
	return out
}

// logger returns a logger of level Warn writing to w.
func (w *warnLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
