package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

func init() {
	register(command{name: "send", summary: "send a message to a group and follow its progress", run: runSend})
}

// listFlag collects a repeatable, comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

type createBody struct {
	From       string   `json:"from"`
	To         []string `json:"to"`
	Text       string   `json:"text"`
	Mode       string   `json:"mode,omitempty"`
	MediaURLs  []string `json:"media_urls,omitempty"`
	CheckAfter string   `json:"check_after,omitempty"`
}

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("send", stderr)
	cf := bindClientFlags(fs)
	from := fs.String("from", "", "sender number, E.164 (required)")
	var to, media listFlag
	fs.Var(&to, "to", "recipient numbers, comma-separated; repeatable (required)")
	text := fs.String("text", "", "message text (required unless --media)")
	fs.Var(&media, "media", "media URL; repeatable")
	mode := fs.String("mode", "", "individual (default) or group_mms")
	idem := fs.String("idempotency-key", "", "makes a retried command return the same group instead of sending twice")
	checkAfter := fs.Duration("check-after", 0, "first status check delay (default: the server's)")
	noFollow := fs.Bool("no-follow", false, "print the group id and exit without following progress")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(fs, pos, 0, "flags only"); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	body := createBody{From: *from, To: to, Text: *text, Mode: *mode, MediaURLs: media}
	if *checkAfter > 0 {
		body.CheckAfter = checkAfter.String()
	}
	h := http.Header{}
	if *idem != "" {
		h.Set("Idempotency-Key", *idem)
	}
	var g groupView
	status, err := c.doJSON(ctx, "POST", "/v1/groups", body, h, &g)
	if err != nil {
		return explain(err)
	}
	fmt.Fprintln(stdout, g.ID)
	if status == http.StatusOK {
		fmt.Fprintln(stderr, "(this idempotency key was used before: showing the group it created; nothing was sent again)")
	}
	if *noFollow {
		return nil
	}
	return follow(ctx, c, g, stdout, isTerminal(stdout))
}

// explain adds the field errors of a validation answer to its message.
func explain(err error) error {
	var ae *apiError
	if !errors.As(err, &ae) || len(ae.Fields) == 0 {
		return err
	}
	parts := make([]string, len(ae.Fields))
	for i, f := range ae.Fields {
		parts[i] = "  " + f.Field + ": " + f.Message
	}
	return fmt.Errorf("request refused (%s):\n%s", ae.Code, strings.Join(parts, "\n"))
}

// progressLine summarises a group's counts on one line.
func progressLine(g groupView) string {
	c := g.Counts
	total := 0
	for _, k := range []string{"pending", "sending", "sent", "delivered", "failed", "unconfirmed", "unknown", "opted_out", "canceled"} {
		total += c[k]
	}
	parts := []string{fmt.Sprintf("%-8s %d/%d delivered", g.Status, c["delivered"], total)}
	for _, k := range []struct{ key, label string }{
		{"sent", "sent"}, {"pending", "pending"}, {"sending", "sending"}, {"failed", "failed"},
		{"unconfirmed", "unconfirmed"}, {"unknown", "unknown"}, {"opted_out", "opted out"}, {"canceled", "canceled"},
		{"replied", "replied"}, {"acknowledged", "acknowledged"},
	} {
		if c[k.key] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[k.key], k.label))
		}
	}
	line := strings.Join(parts, " · ")
	if g.PauseReason != "" {
		line += " — paused: " + g.PauseReason
	}
	return line
}

// follow prints progress until the group is complete or canceled, or ctx
// ends (Ctrl-C). The stream only says that something changed; the counts
// come from the group itself, re-read after each burst of changes. A
// dropped stream is resumed with Last-Event-ID.
func follow(ctx context.Context, c *apiClient, g groupView, out io.Writer, tty bool) error {
	last := ""
	show := func(g groupView) {
		line := progressLine(g)
		switch {
		case tty:
			fmt.Fprintf(out, "\r%s\x1b[K", line)
		case line != last:
			fmt.Fprintln(out, line)
		}
		last = line
	}
	show(g)
	if g.finished() {
		return done(out, tty)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // the reader leaves once cancel below has run
	defer cancel()
	changed := make(chan struct{}, 1)
	streamErr := make(chan error, 1)
	wg.Go(func() {
		lastID := strconv.FormatUint(g.Seq, 10)
		failures := 0
		for {
			err := c.stream(ctx, "/v1/groups/"+g.ID+"/stream", lastID, func(ev streamEvent) error {
				if ev.Event == "error" {
					return errors.New("server reported a stream error")
				}
				if ev.Event == "change" {
					lastID, failures = ev.ID, 0
					select {
					case changed <- struct{}{}:
					default: // a refresh is already due
					}
				}
				return nil
			})
			if ctx.Err() != nil {
				return
			}
			var ae *apiError
			if errors.As(err, &ae) && ae.Status < 500 {
				streamErr <- err // 401, 404...: retrying will not help
				return
			}
			if failures++; failures > 5 {
				streamErr <- fmt.Errorf("event stream: %w", err)
				return
			}
			t := time.NewTimer(time.Duration(failures) * time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	})
	for {
		select {
		case <-ctx.Done():
			if tty {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "stopped following; the group goes on (crewcast status %s)\n", g.ID)
			return nil
		case err := <-streamErr:
			if tty {
				fmt.Fprintln(out)
			}
			return err
		case <-changed:
			var cur groupView
			if _, err := c.doJSON(ctx, "GET", "/v1/groups/"+g.ID+"?recipients=0", nil, nil, &cur); err != nil {
				if ctx.Err() != nil {
					continue // Ctrl-C: reported above
				}
				return err
			}
			show(cur)
			if cur.finished() {
				return done(out, tty)
			}
		}
	}
}

func done(out io.Writer, tty bool) error {
	if tty {
		fmt.Fprintln(out)
	}
	return nil
}
