package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/crewcast/crewcast/apitype"
)

func init() {
	register(command{name: "send", summary: "send a message and follow it until every recipient has an outcome", run: runSend})
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
	From       string                   `json:"from,omitempty"`
	Pool       string                   `json:"pool,omitempty"`
	To         []string                 `json:"to,omitempty"`
	Crews      []string                 `json:"crews,omitempty"`
	Tags       []string                 `json:"tags,omitempty"`
	Contacts   []string                 `json:"contacts,omitempty"`
	Template   string                   `json:"template,omitempty"`
	Responses  []apitype.ResponseOption `json:"responses,omitempty"`
	Quorum     *quorumBody              `json:"quorum,omitempty"`
	Text       string                   `json:"text,omitempty"`
	Mode       string                   `json:"mode,omitempty"`
	MediaURLs  []string                 `json:"media_urls,omitempty"`
	CheckAfter string                   `json:"check_after,omitempty"`
	policyBody                          // --followup, --escalate-to, --send-at… (send_policy.go)
}

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("send", stderr)
	cf := bindClientFlags(fs)
	from := fs.String("from", "", "sender number, E.164 (required unless --pool)")
	pool := fs.String("pool", "", "send from this sender pool instead of --from: each person from their own number of it")
	var to, media listFlag
	var crews, tags, contacts listFlag
	fs.Var(&to, "to", "recipient numbers, comma-separated; repeatable")
	fs.Var(&crews, "crew", "crew name or id; repeatable (a person in several crews gets one message)")
	fs.Var(&tags, "tag", "every contact with this tag; repeatable")
	fs.Var(&contacts, "contact", "contact id or number; repeatable")
	template := fs.String("template", "", "saved template name or id (its text and responses unless given)")
	responses := fs.String("responses", "", `response options, such as '1=Coming,2=Cannot' (YES/NO choose the first/second)`)
	quorum := fs.String("quorum", "", "KEY:COUNT, such as 1:3: when 3 people answered 1, stop sending to the rest")
	text := fs.String("text", "", "message text (required unless --media)")
	fs.Var(&media, "media", "media URL; repeatable")
	mode := fs.String("mode", "", "individual (default) or group_mms")
	idem := fs.String("idempotency-key", "", "makes a retried command return the same group instead of sending twice")
	checkAfter := fs.Duration("check-after", 0, "first status check delay (default: the server's)")
	noFollow := fs.Bool("no-follow", false, "print the group id and exit without following progress")
	pf := bindPolicyFlags(fs)
	setUsage(fs, `Usage: crewcast send --from NUMBER --to NUMBER[,NUMBER...] --text TEXT [flags]
       crewcast send --from NUMBER --crew NAME --template NAME --responses '1=Coming,2=Cannot' [flags]
       crewcast send --pool NAME --to NUMBER[,NUMBER...] --text TEXT [flags]

Recipients come from --to, --crew, --tag and --contact together; a person
reached several ways gets one message. The text may use {{name}},
{{first_name}} and {{fields.KEY | default "…"}}.

Sends one message to every recipient and follows the group until each has an
outcome, printing the group id first and then one line per change. Then it
lists the recipients that need a person: failed (crewcast retry), unconfirmed
or unknown (crewcast resolve).

Exit status: 0 when no recipient failed, is unconfirmed or unknown (opted-out
and canceled ones are not failures); 1 when some did, or on an error; 2 on a
wrong argument; 3 when following stopped (Ctrl-C) before the end. With
--no-follow: 0 once the server accepted the group.

Flags:
`)
	if _, err := positionals(fs, args, 0, "flags only"); err != nil {
		return err
	}
	switch {
	case *from == "" && *pool == "":
		return usagef("--from is required: the sender number, E.164, or --pool NAME (see 'crewcast send -h')")
	case *from != "" && *pool != "":
		return usagef("give --from or --pool, not both (see 'crewcast send -h')")
	case len(to)+len(crews)+len(tags)+len(contacts) == 0:
		return usagef("no recipients: give --to, --crew, --tag or --contact (see 'crewcast send -h')")
	case *text == "" && len(media) == 0 && *template == "":
		return usagef("--text is required (or --media, or --template) (see 'crewcast send -h')")
	}
	pol, err := pf.body()
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	body := createBody{From: *from, Pool: *pool, To: to, Text: *text, Mode: *mode, MediaURLs: media, Crews: crews, Tags: tags,
		Contacts: contacts, Template: *template, policyBody: pol}
	if err := body.answers(*responses, *quorum); err != nil {
		return err
	}
	if *checkAfter > 0 {
		body.CheckAfter = checkAfter.String()
	}
	h := http.Header{}
	if *idem != "" {
		h.Set("Idempotency-Key", *idem)
	}
	var g apitype.Group
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
	final, err := follow(ctx, c, g, stdout, isTerminal(stdout))
	if err != nil {
		return err
	}
	return attention(ctx, c, final, stdout)
}

// answers sets the body's response options and quorum from --responses
// and --quorum.
func (b *createBody) answers(responses, quorum string) error {
	if responses != "" {
		opts, err := parseResponses(responses)
		if err != nil {
			return err
		}
		b.Responses = opts
	}
	if quorum != "" {
		k, n, ok := strings.Cut(quorum, ":")
		count, err := strconv.Atoi(n)
		if !ok || err != nil || count < 1 || k == "" {
			return usagef("--quorum %q: want KEY:COUNT, such as 1:3", quorum)
		}
		b.Quorum = &quorumBody{Response: k, Count: count}
	}
	return nil
}

// attentionStatuses are the outcomes that need a person: failed may be
// retried, unconfirmed and unknown resolved.
var attentionStatuses = []string{"failed", "unconfirmed", "unknown"}

// maxListed bounds the recipients listed per status (the rest are counted).
const maxListed = 50

// attention lists the recipients of a finished group that need a person and
// returns an exit error when there are any.
func attention(ctx context.Context, c *apiClient, g apitype.Group, out io.Writer) error {
	total := 0
	var parts []string
	for _, st := range attentionStatuses {
		if n := g.Counts[st]; n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	if total == 0 {
		return nil
	}
	fmt.Fprintln(out, "Needs attention:")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NUMBER\tSTATUS\tERROR\tDETAIL")
	var mores []string
	for _, st := range attentionStatuses {
		n := g.Counts[st]
		if n == 0 {
			continue
		}
		var page struct {
			Recipients []apitype.Recipient `json:"recipients"`
		}
		q := url.Values{"status": {st}, "limit": {strconv.Itoa(maxListed)}}
		if _, err := c.doJSON(ctx, "GET", "/v1/groups/"+url.PathEscape(g.ID)+"/recipients?"+q.Encode(), nil, nil, &page); err != nil {
			return err
		}
		for _, r := range page.Recipients {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Number, r.Status, errorText(r), dash(oneLine(r.ErrorDetail, 80)))
		}
		if more := n - len(page.Recipients); more > 0 {
			mores = append(mores, fmt.Sprintf("%d more %s", more, st))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(mores) > 0 {
		fmt.Fprintf(out, "… and %s (crewcast status %s lists everyone)\n", strings.Join(mores, ", "), g.ID)
	}
	if g.Counts["failed"] > 0 {
		fmt.Fprintf(out, "Send once more to a failed one:  crewcast retry %s NUMBER\n", g.ID)
	}
	if g.Counts["unconfirmed"]+g.Counts["unknown"] > 0 {
		fmt.Fprintf(out, "Once you know about the others:  crewcast resolve %s NUMBER --outcome delivered|not_delivered\n", g.ID)
	}
	noun := "recipients need"
	if total == 1 {
		noun = "recipient needs"
	}
	return exitError{code: exitFailed, msg: fmt.Sprintf("%d %s attention: %s", total, noun, strings.Join(parts, ", "))}
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
func progressLine(g apitype.Group) string {
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
//
// It returns the finished group; an interrupted follow is an exitError
// (exitIncomplete).
func follow(ctx context.Context, c *apiClient, g apitype.Group, out io.Writer, tty bool) (apitype.Group, error) {
	last := ""
	show := func(g apitype.Group) {
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
	if finished(g) {
		return g, done(out, tty)
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
			return g, exitError{code: exitIncomplete}
		case err := <-streamErr:
			if tty {
				fmt.Fprintln(out)
			}
			return g, err
		case <-changed:
			var cur apitype.Group
			if _, err := c.doJSON(ctx, "GET", "/v1/groups/"+g.ID+"?recipients=0", nil, nil, &cur); err != nil {
				if ctx.Err() != nil {
					continue // Ctrl-C: reported above
				}
				return g, err
			}
			show(cur)
			if finished(cur) {
				return cur, done(out, tty)
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

type quorumBody struct {
	Response string `json:"response"`
	Count    int    `json:"count"`
}

// parseResponses reads '1=Coming,2=Cannot': the first option's ack is yes
// and the second's no when there are exactly two, so YES/NO answer them.
func parseResponses(s string) ([]apitype.ResponseOption, error) {
	var out []apitype.ResponseOption
	for _, part := range strings.Split(s, ",") {
		k, l, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || strings.TrimSpace(k) == "" || strings.TrimSpace(l) == "" {
			return nil, usagef("--responses %q: want KEY=LABEL,KEY=LABEL such as '1=Coming,2=Cannot'", s)
		}
		out = append(out, apitype.ResponseOption{Key: strings.TrimSpace(k), Label: strings.TrimSpace(l)})
	}
	if len(out) == 2 {
		out[0].Ack, out[1].Ack = "yes", "no"
	}
	return out, nil
}

// tallyLine summarises the answers of a group with response options:
// "1 Coming 2 · 2 Cannot 0 · no reply 3 · quorum 2/3".
func tallyLine(g apitype.Group) string {
	if len(g.Responses) == 0 {
		return ""
	}
	parts := make([]string, 0, len(g.Responses)+2)
	for _, o := range g.Responses {
		parts = append(parts, fmt.Sprintf("%s %s %d", o.Key, o.Label, g.Counts["responses."+o.Key]))
	}
	parts = append(parts, fmt.Sprintf("no reply %d", g.Counts["no_reply"]))
	if q := g.Quorum; q != nil {
		s := fmt.Sprintf("quorum %d/%d", g.Counts["responses."+q.Response], q.Count)
		if q.MetAt != nil {
			s += " met " + fmtTime(q.MetAt)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " · ")
}
