package httpapi

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/errcode"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

// csvSafe keeps spreadsheet programs from running free text as a formula
// (CSV injection): a cell starting with = + - @ or a control character is
// prefixed with a quote. Only free text goes through it: phone numbers
// legitimately start with +.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func csvTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// csvStream writes CSV rows, flushing after every page so that a large
// export streams instead of building up in memory.
type csvStream struct {
	w  http.ResponseWriter
	cw *csv.Writer
	rc *http.ResponseController
}

func startCSV(w http.ResponseWriter, filename string, header []string) (*csvStream, error) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+filename+`"`)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	s := &csvStream{w: w, cw: csv.NewWriter(w), rc: http.NewResponseController(w)}
	return s, s.cw.Write(header)
}

// extendDeadline gives the next writes d to reach the client.
func (s *csvStream) extendDeadline(d time.Duration) {
	_ = s.rc.SetWriteDeadline(time.Now().Add(d)) // ErrNotSupported: nothing to extend
}

func (s *csvStream) flush() error {
	s.cw.Flush()
	if err := s.cw.Error(); err != nil {
		return err
	}
	if err := s.rc.Flush(); err != nil && err != http.ErrNotSupported {
		return err
	}
	return nil
}

// abortStream ends a response that already started with a failure: the
// connection is cut, so a client never mistakes a truncated export for a
// complete one.
func abortStream() { panic(http.ErrAbortHandler) }

// ---- deliveries ----

// deliveryCSVHeader is the base columns, then the answer columns
// (deliveryCSVExtra, reportcsv.go).
var deliveryCSVHeader = slices.Concat(deliveryCSVBase, deliveryCSVExtra)

var deliveryCSVBase = []string{"group_id", "number", "name", "status", "attempts", "provider_message_id",
	"error_code", "error_class", "claimed_at", "sent_at", "delivered_at", "failed_at", "replied_at", "reply_text",
	"ack", "updated_at"}

func deliveryCSVRow(d store.DeliveryRow) []string {
	return []string{d.GroupID, d.Number, csvSafe(d.Name), string(d.Status), strconv.Itoa(d.Attempts),
		d.ProviderMessageID, d.ErrorCode, errcode.Class(d.ErrorCode, d.ErrorClass), csvTime(d.ClaimedAt), csvTime(d.SentAt),
		csvTime(d.DeliveredAt), csvTime(d.FailedAt), csvTime(d.RepliedAt), csvSafe(d.LastReply), string(d.Ack),
		csvTime(d.UpdatedAt)}
}

type deliveryListJSON struct {
	Deliveries []apitype.Delivery `json:"deliveries"`
	NextCursor string             `json:"next_cursor"`
}

// deliveryQuery reads the report filters shared by deliveries and summary.
func deliveryQuery(r *http.Request) (store.DeliveryQuery, error) {
	var q store.DeliveryQuery
	var err error
	if q.Since, err = queryTime(r, "since"); err != nil {
		return q, err
	}
	if q.Until, err = queryTime(r, "until"); err != nil {
		return q, err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return q, invalid("until", "must be after since")
	}
	if q.Status, err = recipientStatus(r); err != nil {
		return q, err
	}
	if s := r.URL.Query().Get("number"); s != "" {
		if q.Number, err = normalizeNumber("number", s); err != nil {
			return q, err
		}
	}
	// A carrier-truth class is a set of codes; a base class leaves out
	// the codes that show as a carrier-truth class.
	switch c := r.URL.Query().Get("error_class"); {
	case c == "":
	case errcode.Codes(c) != nil:
		q.ErrorCodes = errcode.Codes(c)
	case errcode.IsClass(c):
		q.ErrorClass, q.NotErrorCodes = crewcast.ErrorClass(c), errcode.CarrierCodes()
	default:
		return q, invalid("error_class", "unknown error class")
	}
	q.GroupID = r.URL.Query().Get("group_id")
	q.Cursor = r.URL.Query().Get("cursor")
	return q, nil
}

func (a *api) reportDeliveries(w http.ResponseWriter, r *http.Request) error {
	q, err := deliveryQuery(r)
	if err != nil {
		return err
	}
	if q.Limit, err = queryLimit(r, 10000); err != nil {
		return err
	}
	asCSV, err := wantCSV(r)
	if err != nil {
		return err
	}
	if asCSV {
		name := "deliveries.csv"
		if q.GroupID != "" {
			if name, err = a.groupCSVName(r.Context(), q.GroupID); err != nil {
				return err
			}
		}
		return a.deliveriesCSV(w, r, q, name)
	}
	rows, next, err := a.store.ListDeliveries(r.Context(), q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deliveryList(rows, next))
	return nil
}

func deliveryList(rows []store.DeliveryRow, next string) deliveryListJSON {
	out := deliveryListJSON{Deliveries: make([]apitype.Delivery, len(rows)), NextCursor: next}
	for i, d := range rows {
		out.Deliveries[i] = apitype.Delivery{GroupID: d.GroupID, Recipient: recipientOf(d)}
	}
	return out
}

// deliveriesCSV streams every delivery matching q from its cursor on; a
// limit caps the number of rows.
func (a *api) deliveriesCSV(w http.ResponseWriter, r *http.Request, q store.DeliveryQuery, filename string) error {
	groups := a.newCSVGroups()
	return streamCSVPages(a, w, r, filename, deliveryCSVHeader, q.Limit, q.Cursor,
		func(cursor string, limit int) ([]store.DeliveryRow, string, error) {
			q.Cursor, q.Limit = cursor, limit
			rows, next, err := a.store.ListDeliveries(r.Context(), q)
			if err == nil {
				err = groups.load(r.Context(), rows)
			}
			return rows, next, err
		}, groups.row)
}

// streamCSVPages streams the rows list returns, page by page from cursor
// on, as CSV under header; total caps the number of rows (0: all).
func streamCSVPages[T any](a *api, w http.ResponseWriter, r *http.Request, filename string, header []string, total int, cursor string,
	list func(cursor string, limit int) ([]T, string, error), row func(T) []string) error {
	const page = 1000
	limit := page
	if total > 0 && total < page {
		limit = total
	}
	// The first page is read before anything is written, so the common
	// failures still get a proper status.
	rows, next, err := list(cursor, limit)
	if err != nil {
		return err
	}
	s, err := startCSV(w, filename, header)
	if err != nil {
		return nil
	}
	written := 0
	for {
		// A long export outlives the server's write timeout as long as
		// the client keeps reading: each page gets its own deadline.
		s.extendDeadline(a.cfg.StreamWriteTimeout)
		for _, d := range rows {
			if total > 0 && written == total {
				return s.flush()
			}
			if err := s.cw.Write(row(d)); err != nil {
				return nil
			}
			written++
		}
		if err := s.flush(); err != nil {
			return nil // the client left
		}
		if next == "" || (total > 0 && written >= total) {
			return nil
		}
		if rows, next, err = list(next, limit); err != nil {
			a.log.ErrorContext(r.Context(), "csv export failed", "err", err.Error())
			abortStream()
		}
	}
}

// ---- summary ----

type summaryJSON struct {
	Total               int             `json:"total"`
	ByStatus            map[string]int  `json:"by_status"`
	Replied             int             `json:"replied"`
	Acknowledged        int             `json:"acknowledged"`
	DeliveryRate        float64         `json:"delivery_rate"`
	MedianToDeliveredMS int64           `json:"median_to_delivered_ms"`
	P95ToDeliveredMS    int64           `json:"p95_to_delivered_ms"`
	TopErrorCodes       []codeCountJSON `json:"top_error_codes"`
	// ByErrorClass counts the rows with an error by the class they show
	// (errcode.Class), every class present, zero or not.
	ByErrorClass map[string]int `json:"by_error_class"`
}

type codeCountJSON struct {
	Code  string `json:"code"`
	Class string `json:"class"`
	Count int    `json:"count"`
}

func summaryOf(s store.Summary) summaryJSON {
	out := summaryJSON{Total: s.Total, ByStatus: map[string]int{}, Replied: s.Replied, Acknowledged: s.Acknowledged,
		DeliveryRate: s.DeliveryRate, MedianToDeliveredMS: s.MedianToDelivered.Milliseconds(),
		P95ToDeliveredMS: s.P95ToDelivered.Milliseconds(), TopErrorCodes: []codeCountJSON{}}
	for _, st := range crewcast.AllStatuses {
		out.ByStatus[string(st)] = s.ByStatus[st]
	}
	for _, c := range s.TopErrorCodes {
		out.TopErrorCodes = append(out.TopErrorCodes, codeCountJSON{Code: c.Code, Class: errcode.Class(c.Code, c.Class), Count: c.Count})
	}
	out.ByErrorClass = make(map[string]int, len(errcode.Classes()))
	for _, c := range errcode.Classes() {
		out.ByErrorClass[c] = 0
	}
	for _, c := range s.ErrorCodes {
		if class := errcode.Class(c.Code, c.Class); class != "" {
			out.ByErrorClass[class] += c.Count
		}
	}
	return out
}

func (a *api) reportSummary(w http.ResponseWriter, r *http.Request) error {
	q, err := deliveryQuery(r)
	if err != nil {
		return err
	}
	q.Cursor = ""
	asCSV, err := wantCSV(r)
	if err != nil {
		return err
	}
	sum, err := a.store.Summarize(r.Context(), q)
	if err != nil {
		return err
	}
	out := summaryOf(sum)
	if !asCSV {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	// One metric per row: the figures and the error codes do not share
	// columns, and metric,value rows read well in any spreadsheet.
	rows := [][]string{{"total", strconv.Itoa(out.Total)}}
	for _, st := range crewcast.AllStatuses {
		rows = append(rows, []string{"status." + string(st), strconv.Itoa(out.ByStatus[string(st)])})
	}
	rows = append(rows,
		[]string{"replied", strconv.Itoa(out.Replied)},
		[]string{"acknowledged", strconv.Itoa(out.Acknowledged)},
		[]string{"delivery_rate", strconv.FormatFloat(out.DeliveryRate, 'f', 4, 64)},
		[]string{"median_to_delivered_ms", strconv.FormatInt(out.MedianToDeliveredMS, 10)},
		[]string{"p95_to_delivered_ms", strconv.FormatInt(out.P95ToDeliveredMS, 10)})
	for _, c := range out.TopErrorCodes {
		rows = append(rows, []string{"error_code." + csvSafe(c.Code), strconv.Itoa(c.Count)})
	}
	for _, c := range errcode.Classes() {
		rows = append(rows, []string{"error_class." + c, strconv.Itoa(out.ByErrorClass[c])})
	}
	s, err := startCSV(w, "summary.csv", []string{"metric", "value"})
	if err != nil {
		return nil
	}
	_ = s.cw.WriteAll(rows) // a write error means the client left
	return nil
}

// ---- per-recipient history ----

type recipientReportJSON struct {
	Number      string             `json:"number"`
	Suppression *suppressionJSON   `json:"suppression"`
	Deliveries  []apitype.Delivery `json:"deliveries"`
	// Confirmations are the STOP and HELP answers crewcast sent this
	// person in the groups of this page.
	Confirmations []confirmationJSON `json:"confirmations"`
	// AutoReplies are the callouts' confirmed_text and filled_text sent
	// to this person in the groups of this page (callout.go).
	AutoReplies []autoReplyJSON `json:"auto_replies"`
	NextCursor  string          `json:"next_cursor"`
}

type confirmationJSON struct {
	GroupID           string     `json:"group_id"`
	Keyword           string     `json:"keyword"`
	Text              string     `json:"text"`
	From              string     `json:"from"`
	Status            string     `json:"status"`
	ProviderMessageID string     `json:"provider_message_id"`
	Detail            string     `json:"detail"`
	ClaimedAt         *time.Time `json:"claimed_at"`
}

// confirmationsTo lists the confirmations sent to number in the groups of
// rows. Only a group the person replied to can hold one, so only those
// groups' states are read.
func (a *api) confirmationsTo(ctx context.Context, number string, rows []store.DeliveryRow) ([]confirmationJSON, []autoReplyJSON, error) {
	out, auto := []confirmationJSON{}, []autoReplyJSON{}
	for _, d := range rows {
		if d.RepliedAt.IsZero() {
			continue
		}
		g, ok, err := tracker.LoadGroup(ctx, a.store, d.GroupID)
		if err != nil {
			return nil, nil, fmt.Errorf("load group state: %w", err)
		}
		r := g.Recipient(number)
		if !ok || r == nil {
			continue
		}
		auto = append(auto, autoRepliesOf(&g, r)...)
		for _, c := range g.Confirmations {
			if c.Index == r.Index {
				out = append(out, confirmationJSON{GroupID: d.GroupID, Keyword: c.Keyword, Text: c.Text, From: c.From,
					Status: c.Status, ProviderMessageID: c.MessageID, Detail: c.Detail, ClaimedAt: tsOrNil(c.At)})
			}
		}
	}
	return out, auto, nil
}

func (a *api) reportRecipient(w http.ResponseWriter, r *http.Request) error {
	number, err := pathNumber(r)
	if err != nil {
		return err
	}
	limit, err := queryLimit(r, 10000)
	if err != nil {
		return err
	}
	asCSV, err := wantCSV(r)
	if err != nil {
		return err
	}
	q := store.DeliveryQuery{Number: number, Cursor: r.URL.Query().Get("cursor"), Limit: limit}
	if asCSV {
		return a.deliveriesCSV(w, r, q, "recipient.csv")
	}
	rows, next, err := a.store.ListDeliveries(r.Context(), q)
	if err != nil {
		return err
	}
	sup, err := a.store.Suppressed(r.Context(), []string{number})
	if err != nil {
		return err
	}
	list := deliveryList(rows, next)
	out := recipientReportJSON{Number: number, Deliveries: list.Deliveries, NextCursor: next}
	if out.Confirmations, out.AutoReplies, err = a.confirmationsTo(r.Context(), number, rows); err != nil {
		return err
	}
	if s, ok := sup[number]; ok {
		sj := suppressionOf(s)
		out.Suppression = &sj
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---- replies ----

type replyListJSON struct {
	Replies    []apitype.Reply `json:"replies"`
	NextCursor string          `json:"next_cursor"`
}

func (a *api) listReplies(w http.ResponseWriter, r *http.Request) error {
	unmatched, err := queryBool(r, "unmatched")
	if err != nil {
		return err
	}
	ambiguous, err := queryBool(r, "ambiguous")
	if err != nil {
		return err
	}
	limit, err := queryLimit(r, 1000)
	if err != nil {
		return err
	}
	q := store.ReplyQuery{Unmatched: unmatched, Ambiguous: ambiguous, GroupID: r.URL.Query().Get("group_id"),
		Cursor: r.URL.Query().Get("cursor"), Limit: limit}
	if s := r.URL.Query().Get("number"); s != "" {
		if q.Number, err = normalizeNumber("number", s); err != nil {
			return err
		}
	}
	rows, next, err := a.store.ListReplies(r.Context(), q)
	if err != nil {
		return err
	}
	out := replyListJSON{Replies: make([]apitype.Reply, len(rows)), NextCursor: next}
	for i, rp := range rows {
		out.Replies[i] = replyOf(rp)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// replyOf renders a stored reply as the API shows it (webhookout.Unmatched
// renders the same shape; TestWebhookShapesMatchAPI compares them).
func replyOf(rp store.Reply) apitype.Reply {
	media := rp.Media
	if media == nil {
		media = []string{}
	}
	return apitype.Reply{Provider: rp.Provider, EventID: rp.EventID, GroupID: rp.GroupID, Number: rp.Number,
		To: rp.To, Text: rp.Text, Media: media, ReceivedAt: tsOrNil(rp.ReceivedAt), PossibleOptOut: rp.PossibleOptOut, Ambiguous: rp.Ambiguous}
}

// ---- suppressions ----

type suppressionJSON struct {
	Number    string     `json:"number"`
	Reason    string     `json:"reason"`
	CreatedAt *time.Time `json:"created_at"`
}

func suppressionOf(s store.Suppression) suppressionJSON {
	return suppressionJSON{Number: s.Number, Reason: s.Reason, CreatedAt: tsOrNil(s.CreatedAt)}
}

type suppressionListJSON struct {
	Suppressions []suppressionJSON `json:"suppressions"`
	NextCursor   string            `json:"next_cursor"`
}

func (a *api) listSuppressions(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r, 1000)
	if err != nil {
		return err
	}
	rows, next, err := a.store.ListSuppressions(r.Context(), r.URL.Query().Get("cursor"), limit)
	if err != nil {
		return err
	}
	out := suppressionListJSON{Suppressions: make([]suppressionJSON, len(rows)), NextCursor: next}
	for i, s := range rows {
		out.Suppressions[i] = suppressionOf(s)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// suppressionReasons are the reasons a suppression may be added with.
var suppressionReasons = []string{"manual", "stop", "provider_opt_out"}

func (a *api) addSuppression(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Number string `json:"number"`
		Reason string `json:"reason"`
	}
	if err := decodeJSON(w, r, 4<<10, &body); err != nil {
		return err
	}
	number, err := normalizeNumber("number", body.Number)
	if err != nil {
		return err
	}
	if body.Reason == "" {
		body.Reason = "manual"
	}
	ok := false
	for _, s := range suppressionReasons {
		ok = ok || body.Reason == s
	}
	if !ok {
		return invalid("reason", `must be "manual", "stop" or "provider_opt_out"`)
	}
	s := store.Suppression{Number: number, Reason: body.Reason, CreatedAt: a.now().UTC()}
	add := a.store.AddSuppression
	if sp, ok := a.svc.(Suppressor); ok {
		add = sp.AddSuppression
	}
	// The audit entry commits with the suppression: both or neither.
	entry := store.AuditEntry{At: s.CreatedAt, Actor: requestActor(r), Action: auditSuppressAdd,
		Target: store.AuditNumber(number) + " " + body.Reason}
	if err := add(r.Context(), s, entry); err != nil {
		return err
	}
	if err := a.store.AppendConsent(r.Context(), operatorConsent(r, number, store.ConsentOptedOut, s.CreatedAt)); err != nil {
		return err
	}
	// Answer with what is stored: a stop or provider_opt_out never
	// replaces an operator's manual suppression.
	if got, err := a.store.Suppressed(r.Context(), []string{number}); err == nil {
		if stored, ok := got[number]; ok {
			s = stored
		}
	}
	writeJSON(w, http.StatusCreated, suppressionOf(s))
	return nil
}

func (a *api) removeSuppression(w http.ResponseWriter, r *http.Request) error {
	number, err := pathNumber(r)
	if err != nil {
		return err
	}
	// The audit entry commits with the removal of the number; the keyed
	// hash's removal below is part of the same recorded action (if it
	// fails, the client hears so and the hashed opt-out stays).
	entry := store.AuditEntry{At: a.now().UTC(), Actor: requestActor(r), Action: auditSuppressRemov, Target: store.AuditNumber(number)}
	was, err := a.suppressedForms(r.Context(), []string{number})
	if err != nil {
		return err
	}
	if err := a.store.RemoveSuppression(r.Context(), number, entry); err != nil {
		return err
	}
	if a.cfg.Privacy != nil {
		// An erased person's opt-out is kept under the keyed hash.
		if h := a.cfg.Privacy.HashedNumber(number); h != "" {
			if err := a.store.RemoveSuppression(r.Context(), h); err != nil {
				return err
			}
		}
	}
	if was[number] {
		// The operator lifted an opt-out: recorded in the number's history.
		if err := a.store.AppendConsent(r.Context(), operatorConsent(r, number, store.ConsentOptedIn, entry.At)); err != nil {
			return err
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
