package httpapi

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// The group CSV's answer columns (docs/openapi.yaml, /v1/reports/deliveries): what
// each person was sent, what they chose, whether their answer counts for
// the quorum, follow-ups sent and the channel. They come from each group's
// group.created event and, for a group with a policy, its state: read
// once per group in the export, not per row.

// deliveryCSVExtra are the columns after deliveryCSVHeader's base ones.
var deliveryCSVExtra = []string{"text", "response", "response_label", "selected", "followups_sent", "channel"}

// csvGroup is what the answer columns need of one group.
type csvGroup struct {
	text    string            // the group's text (a recipient's own, when it differs, is in texts)
	texts   map[string]string // number → the recipient's own rendered text
	labels  map[string]string // option key → label
	quorum  string            // the quorum's response key; "" without a quorum
	channel string
	policy  *policyView // nil without a policy
}

// csvGroups caches csvGroup per group id for one export.
type csvGroups struct {
	a    *api
	byID map[string]*csvGroup
}

func (a *api) newCSVGroups() *csvGroups { return &csvGroups{a: a, byID: map[string]*csvGroup{}} }

// load reads the groups of rows not read yet.
func (c *csvGroups) load(ctx context.Context, rows []store.DeliveryRow) error {
	for _, d := range rows {
		if _, ok := c.byID[d.GroupID]; ok {
			continue
		}
		g := &csvGroup{texts: map[string]string{}, labels: map[string]string{}, channel: "sms"}
		c.byID[d.GroupID] = g
		created, err := c.a.createdEvent(ctx, d.GroupID)
		if err != nil {
			return err
		}
		if created == nil {
			continue
		}
		g.text = created.Text
		for _, e := range created.Recipients {
			if e.Text != "" {
				g.texts[e.Number] = e.Text
			}
		}
		for _, o := range created.Responses {
			g.labels[o.Key] = o.Label
		}
		if created.Quorum != nil {
			g.quorum = created.Quorum.Response
		}
		if created.Mode == crewcast.ModeGroupMMS || len(created.MediaURLs) > 0 {
			g.channel = "mms"
		}
		if created.Policy != nil {
			if g.policy, err = c.a.policyOf(ctx, d.GroupID); err != nil {
				return err
			}
		}
	}
	return nil
}

// row is a delivery's CSV row: the base columns, then deliveryCSVExtra.
func (c *csvGroups) row(d store.DeliveryRow) []string {
	g := c.byID[d.GroupID]
	if g == nil {
		g = &csvGroup{channel: "sms"}
	}
	text, ok := g.texts[d.Number]
	if !ok {
		text = g.text
	}
	selected := ""
	if g.quorum != "" {
		selected = strconv.FormatBool(d.Response == g.quorum)
	}
	followups := g.policy.recipient(d.Number).FollowupsSent
	return append(deliveryCSVRow(d), csvSafe(text), csvSafe(d.Response), csvSafe(g.labels[d.Response]), selected,
		strconv.Itoa(followups), g.channel)
}

// groupCSVName names a group's export after its text and day:
// "crew-call-7am-2026-12-03.csv"; "deliveries.csv" for an unknown group.
func (a *api) groupCSVName(ctx context.Context, id string) (string, error) {
	row, err := a.store.GetGroup(ctx, id)
	if errors.Is(err, actor.ErrNotFound) {
		return "deliveries.csv", nil
	}
	if err != nil {
		return "", err
	}
	return csvSlug(row.Text) + "-" + row.CreatedAt.UTC().Format("2006-01-02") + ".csv", nil
}

// maxSlug bounds the text part of an export's file name.
const maxSlug = 40

// csvSlug is the first line of text as a file name: lower-case ASCII
// letters and digits joined by single hyphens, accents dropped ("café" →
// "cafe"), at most maxSlug characters cut at a hyphen; "group" when
// nothing is left.
func csvSlug(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	var b strings.Builder
	hyphen := false
	for _, r := range norm.NFD.String(line) {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(unicode.ToLower(r))
		case unicode.Is(unicode.Mn, r):
			// a combining accent: dropped, the letter stays
		default:
			hyphen = true
		}
	}
	s := b.String()
	if len(s) > maxSlug {
		s = s[:maxSlug]
		if i := strings.LastIndexByte(s, '-'); i > 0 {
			s = s[:i]
		}
	}
	if s == "" {
		return "group"
	}
	return s
}
