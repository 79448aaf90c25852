package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/crewcast/crewcast/group"
)

// POST /v1/groups/preview (docs/design.md §11): the create body, resolved and
// planned exactly as a create would be, answered with who would be
// texted and how — without sending or writing anything.

// previewListMax bounds the suppressed and invalid lists of a preview;
// the totals count them all.
const previewListMax = 100

type previewJSON struct {
	Recipients      int                 `json:"recipients"`
	Suppressed      []previewSuppressed `json:"suppressed"`
	SuppressedTotal int                 `json:"suppressed_total"`
	Invalid         []previewInvalid    `json:"invalid"`
	InvalidTotal    int                 `json:"invalid_total"`
	Segments        int                 `json:"segments"`
	Encoding        string              `json:"encoding"`
	Units           int                 `json:"units"`
	Samples         []previewSampleJSON `json:"samples"`
	// SegmentsTotal, Cost and UCS2Chars say what the send costs (cost.go).
	SegmentsTotal int              `json:"segments_total"`
	Cost          json.Number      `json:"cost,omitempty"`
	UCS2Chars     []group.UCS2Char `json:"ucs2_chars"`
}

type previewSuppressed struct {
	Number string `json:"number"`
	Reason string `json:"reason"`
}

type previewInvalid struct {
	Input string `json:"input"`
	Error string `json:"error"`
}

type previewSampleJSON struct {
	Number string `json:"number"`
	Name   string `json:"name"`
	Text   string `json:"text"`
}

// previewSamples is how many rendered texts a preview shows.
const previewSamples = 3

func (a *api) previewGroup(w http.ResponseWriter, r *http.Request) error {
	var body createRequest
	if err := decodeJSON(w, r, a.cfg.MaxCreateBodyBytes, &body); err != nil {
		return err
	}
	if _, err := parseCheckAfter(body.CheckAfter); err != nil {
		return err
	}
	req, err := a.request(r.Context(), body)
	if err != nil {
		return err
	}
	out := previewJSON{Suppressed: []previewSuppressed{}, Invalid: []previewInvalid{}, Samples: []previewSampleJSON{}}
	a.previewCost(&out, req.Text, group.Created{}, nil) // nobody texted yet: zero segments
	to, recips, resolved, numbers := previewValid(&out, req)
	req.To, req.Recipients, req.Resolved = to, recips, resolved
	sup, err := a.store.Suppressed(r.Context(), numbers)
	if err != nil {
		return err
	}
	suppressed := make(map[string]bool, len(sup))
	for n := range sup {
		suppressed[n] = true
	}
	if len(to)+len(recips)+len(resolved) == 0 {
		writeJSON(w, http.StatusOK, out) // nobody valid: nothing more to say
		return nil
	}
	if err := a.previewPoolFrom(r.Context(), &req); err != nil { // providers.go
		return err
	}
	created, ferrs, total := group.PlanWith("preview", req, group.Settings{}, suppressed, time.Time{}, group.NormalizeNumber)
	if len(ferrs) > 0 {
		return fieldErrorsTotal(ferrs, total)
	}
	for _, e := range created.Recipients {
		if e.Suppressed {
			out.SuppressedTotal++
			if len(out.Suppressed) < previewListMax {
				out.Suppressed = append(out.Suppressed, previewSuppressed{Number: e.Number, Reason: sup[e.Number].Reason})
			}
			continue
		}
		out.Recipients++
		if len(out.Samples) < previewSamples {
			text := e.Text
			if text == "" {
				text = created.Text
			}
			out.Samples = append(out.Samples, previewSampleJSON{Number: e.Number, Name: e.Name, Text: text})
		}
	}
	reached := make([]group.RosterEntry, 0, out.Recipients)
	for _, e := range created.Recipients {
		if !e.Suppressed {
			reached = append(reached, e)
		}
	}
	a.previewCost(&out, req.Text, created, reached)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// previewValid keeps the request's numbers that parse and lists those
// that do not in out: not fatal, the preview shows what a send would
// reach once they are fixed. numbers are the valid ones, normalised, for
// the suppression lookup.
func previewValid(out *previewJSON, req group.Request) (to []string, recips, resolved []group.RecipientInput, numbers []string) {
	clean := func(in string) (string, bool) {
		n, err := group.NormalizeNumber(in)
		if err != nil {
			out.InvalidTotal++
			if len(out.Invalid) < previewListMax {
				out.Invalid = append(out.Invalid, previewInvalid{Input: in, Error: err.Error()})
			}
			return "", false
		}
		return n, true
	}
	for _, n := range req.To {
		if e, ok := clean(n); ok {
			to = append(to, n)
			numbers = append(numbers, e)
		}
	}
	for _, rc := range req.Recipients {
		if e, ok := clean(rc.Number); ok {
			recips = append(recips, rc)
			numbers = append(numbers, e)
		}
	}
	for _, rc := range req.Resolved {
		if e, ok := clean(rc.Number); ok {
			resolved = append(resolved, rc)
			numbers = append(numbers, e)
		}
	}
	return to, recips, resolved, numbers
}

// fieldErrorsTotal is fieldErrors for a list cut at group.MaxFieldErrors.
func fieldErrorsTotal(errs []group.FieldError, total int) error {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Error()
	}
	e := &apiError{Status: http.StatusBadRequest, Code: codeInvalidRequest, Message: strings.Join(parts, "; "), Fields: errs}
	if total > len(errs) {
		e.FieldsTotal = total
	}
	return e
}
