package httpapi

import (
	"net/http"
	"time"

	"github.com/crewcast/crewcast/store"
)

// GET /v1/audit (admin): the audit trail, newest first (docs/design.md §14).

type auditActorJSON struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

type auditEntryJSON struct {
	At     time.Time      `json:"at"`
	Actor  auditActorJSON `json:"actor"`
	Action string         `json:"action"`
	Target string         `json:"target"`
	IP     string         `json:"ip"`
}

type auditListJSON struct {
	Entries    []auditEntryJSON `json:"entries"`
	NextCursor string           `json:"next_cursor"`
}

var auditCSVHeader = []string{"at", "actor_type", "actor_id", "actor_name", "action", "target", "ip"}

// auditCSVRow neutralises every free-text cell: names, targets (emails)
// and even ids are chosen by people.
func auditCSVRow(e store.AuditEntry) []string {
	return []string{csvTime(e.At), csvSafe(e.Actor.Type), csvSafe(e.Actor.ID), csvSafe(e.Actor.Name),
		csvSafe(e.Action), csvSafe(e.Target), csvSafe(e.Actor.IP)}
}

func auditOf(e store.AuditEntry) auditEntryJSON {
	return auditEntryJSON{At: e.At.UTC(), Actor: auditActorJSON{Type: e.Actor.Type, ID: e.Actor.ID, Name: e.Actor.Name},
		Action: e.Action, Target: e.Target, IP: e.Actor.IP}
}

func (a *api) listAudit(w http.ResponseWriter, r *http.Request) error {
	var q store.AuditQuery
	var err error
	if q.Since, err = queryTime(r, "since"); err != nil {
		return err
	}
	if q.Until, err = queryTime(r, "until"); err != nil {
		return err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return invalid("until", "must be after since")
	}
	q.Actor = r.URL.Query().Get("actor")
	q.Action = r.URL.Query().Get("action")
	q.Cursor = r.URL.Query().Get("cursor")
	if q.Limit, err = queryLimit(r, 10000); err != nil {
		return err
	}
	asCSV, err := wantCSV(r)
	if err != nil {
		return err
	}
	if asCSV {
		return a.auditCSV(w, r, q)
	}
	rows, next, err := a.store.ListAudit(r.Context(), q)
	if err != nil {
		return err
	}
	out := auditListJSON{Entries: make([]auditEntryJSON, len(rows)), NextCursor: next}
	for i, e := range rows {
		out.Entries[i] = auditOf(e)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// auditCSV streams every matching entry (or limit of them), page by page.
func (a *api) auditCSV(w http.ResponseWriter, r *http.Request, q store.AuditQuery) error {
	return streamCSVPages(a, w, r, "audit.csv", auditCSVHeader, q.Limit, q.Cursor,
		func(cursor string, limit int) ([]store.AuditEntry, string, error) {
			q.Cursor, q.Limit = cursor, limit
			return a.store.ListAudit(r.Context(), q)
		}, auditCSVRow)
}
