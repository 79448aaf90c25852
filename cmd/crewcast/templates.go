package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crewcast/crewcast/apitype"
)

// crewcast templates …: saved message texts with their response options
// (docs/operations.md), through the API. 'crewcast send --template NAME'
// sends one.

func init() {
	register(command{name: "templates", summary: "list, show, create and delete saved message templates", run: runTemplates})
}

type templateView struct {
	ID        string                   `json:"id"`
	Name      string                   `json:"name"`
	Text      string                   `json:"text"`
	Responses []apitype.ResponseOption `json:"responses"`
	UpdatedAt *time.Time               `json:"updated_at"`
}

func runTemplates(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := newFlagSet("templates "+sub, stderr)
	cf := bindClientFlags(fs)
	text := fs.String("text", "", "the message, with {{variables}} such as {{first_name}} (create)")
	responses := fs.String("responses", "", `response options, such as '1=Coming,2=Cannot' (create)`)
	setUsage(fs, `Usage: crewcast templates [list]
       crewcast templates show NAME
       crewcast templates create NAME --text TEXT [--responses '1=Coming,2=Cannot']
       crewcast templates delete NAME

Templates are saved messages with their response options: 'crewcast send
--template NAME' sends one, and the board's New message form offers them.
NAME is a template's name or id.

Flags:
`)
	pos, err := nameArgs(fs, args, sub, "a template name")
	if err != nil {
		return err
	}
	var opts []apitype.ResponseOption
	if sub == "create" {
		if strings.TrimSpace(*text) == "" {
			return usagef("templates create: --text is required")
		}
		if *responses != "" {
			if opts, err = parseResponses(*responses); err != nil {
				return err
			}
		}
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		return listTemplates(ctx, c, stdout)
	case "create":
		var tp templateView
		body := map[string]any{"name": pos[0], "text": *text}
		if opts != nil {
			body["responses"] = opts
		}
		if _, err := c.doJSON(ctx, "POST", "/v1/templates", body, nil, &tp); err != nil {
			return explain(err)
		}
		fmt.Fprintf(stdout, "%s\t%s\n", tp.ID, tp.Name)
		return nil
	case "show":
		tp, err := findTemplate(ctx, c, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "template %s (%s)\n%s\n", tp.Name, tp.ID, tp.Text)
		if len(tp.Responses) > 0 {
			fmt.Fprintf(stdout, "responses: %s\n", responsesLine(tp.Responses))
		}
		return nil
	case "delete":
		tp, err := findTemplate(ctx, c, pos[0])
		if err != nil {
			return err
		}
		if _, err := c.doJSON(ctx, "DELETE", "/v1/templates/"+url.PathEscape(tp.ID), nil, nil, nil); err != nil {
			return explain(err)
		}
		fmt.Fprintf(stdout, "deleted template %s\n", tp.Name)
		return nil
	}
	return usagef("unknown templates command %q: want list, show, create or delete", sub)
}

func listTemplates(ctx context.Context, c *apiClient, stdout io.Writer) error {
	ts, err := fetchTemplates(ctx, c)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTEXT\tRESPONSES\tID")
	for _, tp := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", tp.Name, oneLine(tp.Text, 50), dash(responsesLine(tp.Responses)), tp.ID)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	noun := "templates"
	if len(ts) == 1 {
		noun = "template"
	}
	fmt.Fprintf(stdout, "%d %s\n", len(ts), noun)
	return nil
}

// responsesLine writes options as --responses takes them: "1=Coming,2=Cannot".
func responsesLine(opts []apitype.ResponseOption) string {
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = o.Key + "=" + o.Label
	}
	return strings.Join(parts, ",")
}

func fetchTemplates(ctx context.Context, c *apiClient) ([]templateView, error) {
	var out struct {
		Templates []templateView `json:"templates"`
	}
	if _, err := c.doJSON(ctx, "GET", "/v1/templates", nil, nil, &out); err != nil {
		return nil, explain(err)
	}
	return out.Templates, nil
}

// findTemplate finds a template by id or name.
func findTemplate(ctx context.Context, c *apiClient, ref string) (templateView, error) {
	ts, err := fetchTemplates(ctx, c)
	if err != nil {
		return templateView{}, err
	}
	for _, tp := range ts {
		if tp.ID == ref || tp.Name == ref {
			return tp, nil
		}
	}
	return templateView{}, fmt.Errorf("no template %q ('crewcast templates' lists them)", ref)
}
