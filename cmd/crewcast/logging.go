package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// newLogger builds the server's logger: format "text" (logfmt-like, for a
// terminal or journald) or "json" (one object per line, for log
// shippers), at level debug, info, warn or error.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not json or text", format)
}

// bannerWriter is where serve and demo print what they tell a person at
// start and stop. With text logs it is w itself; with json logs each line
// becomes a JSON object of its own ({"time":…,"level":"INFO","msg":…}, blank
// lines dropped), so that every line a log shipper reads parses as JSON.
func bannerWriter(w io.Writer, format string) io.Writer {
	if strings.ToLower(strings.TrimSpace(format)) != "json" {
		return w
	}
	return &jsonLines{log: slog.New(slog.NewJSONHandler(w, nil))}
}

// jsonLines logs each complete line written to it as one JSON record.
type jsonLines struct {
	log *slog.Logger
	buf []byte
}

func (j *jsonLines) Write(p []byte) (int, error) {
	j.buf = append(j.buf, p...)
	for {
		i := bytes.IndexByte(j.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if line := strings.TrimSpace(string(j.buf[:i])); line != "" {
			j.log.Info(line)
		}
		j.buf = j.buf[i+1:]
	}
}
