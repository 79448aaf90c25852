package httpapi

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// wantCSV decides between JSON and CSV: ?format= wins; otherwise the Accept
// header is negotiated by q-value, then by order (RFC 9110 §12.5.1), and the
// answer is JSON unless CSV is preferred. "application/json, text/csv" is
// JSON, "text/csv;q=0.1, application/json" is JSON, "text/csv" and
// "text/csv, application/json" are CSV; no Accept or "*/*" is JSON.
func wantCSV(r *http.Request) (bool, error) {
	switch f := r.URL.Query().Get("format"); f {
	case "csv":
		return true, nil
	case "json":
		return false, nil
	case "":
	default:
		return false, invalid("format", `must be "json" or "csv"`)
	}
	clauses := parseAccept(r.Header.Get("Accept"))
	csvQ, csvAt := acceptQ(clauses, "text", "csv")
	jsonQ, jsonAt := acceptQ(clauses, "application", "json")
	switch {
	case csvQ == 0:
		return false, nil
	case csvQ != jsonQ:
		return csvQ > jsonQ, nil
	default:
		return csvAt < jsonAt, nil
	}
}

// acceptClause is one media range of an Accept header.
type acceptClause struct {
	typ, sub string
	q        float64
}

// parseAccept reads an Accept header's media ranges in order; a range that
// does not parse is left out, a q that does not parse counts as 0.
func parseAccept(h string) []acceptClause {
	var out []acceptClause
	for part := range strings.SplitSeq(h, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		typ, sub, ok := strings.Cut(mt, "/")
		if !ok {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil || q < 0 || q > 1 {
				q = 0
			}
		}
		out = append(out, acceptClause{typ: typ, sub: sub, q: q})
	}
	return out
}

// acceptQ is the q-value the header gives typ/sub — from its most specific
// matching range (type/sub, then type/*, then */*) — and the position of
// that range; 0 and len(clauses) when nothing matches.
func acceptQ(clauses []acceptClause, typ, sub string) (float64, int) {
	best, q, at := 0, 0.0, len(clauses)
	for i, c := range clauses {
		spec := 0
		switch {
		case c.typ == typ && c.sub == sub:
			spec = 3
		case c.typ == typ && c.sub == "*":
			spec = 2
		case c.typ == "*" && c.sub == "*":
			spec = 1
		}
		if spec > best {
			best, q, at = spec, c.q, i
		}
	}
	return q, at
}
