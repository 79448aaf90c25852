package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

// Error codes of the JSON error envelope. Clients branch on these, never
// on messages.
const (
	codeInvalidJSON      = "invalid_json"
	codeInvalidRequest   = "invalid_request"
	codeInvalidText      = "invalid_text"
	codeUnauthorized     = "unauthorized"
	codeForbidden        = "forbidden"
	codeCrossOrigin      = "cross_origin"
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
	codeConflict         = "conflict"
	codeTooLarge         = "too_large"
	codeUnsupportedMedia = "unsupported_media_type"
	codeIdempotency      = "idempotency_mismatch"
	codeBadSignature     = "bad_signature"
	codeMalformed        = "malformed"
	codeUnavailable      = "unavailable"
	codeNotReady         = "not_ready"
	codeSuppressed       = "suppressed"
	// codeSenderUnregistered: the group would send from a 10DLC or
	// toll-free sender whose registration is not approved (senders.go).
	codeSenderUnregistered = "sender_unregistered"
	// codePasswordChangeRequired: the session's user signed in with a
	// one-time or reset password and must choose a new one first.
	codePasswordChangeRequired = "password_change_required"
)

// apiError is an error that is safe to show: its status, code, message
// and fields go to the client as they are. Anything else a handler
// returns is internal and is shown only as a generic 503.
type apiError struct {
	Status  int
	Code    string
	Message string
	Fields  []group.FieldError
	// FieldsTotal counts every problem when Fields lists only the first
	// group.MaxFieldErrors; 0 otherwise.
	FieldsTotal int
	Header      http.Header // extra response headers (Allow, WWW-Authenticate)
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

func newError(status int, code, msg string) *apiError {
	return &apiError{Status: status, Code: code, Message: msg}
}

func invalid(field, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: codeInvalidRequest, Message: field + ": " + msg,
		Fields: []group.FieldError{{Field: field, Message: msg}}}
}

// textErrors is the 422 of message texts holding characters they may not
// (group.CheckText): each field names the character's 1-based position.
func textErrors(errs []group.FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalidText, Message: strings.Join(msgs, "; "), Fields: errs}
}

// unprocessableOr400 is 422 when every field error is a well-formed value
// the request cannot be carried out with (group.FieldError.Unprocessable),
// else 400.
func unprocessableOr400(fields []group.FieldError) int {
	for _, f := range fields {
		if !f.Unprocessable {
			return http.StatusBadRequest
		}
	}
	if len(fields) == 0 {
		return http.StatusBadRequest
	}
	return http.StatusUnprocessableEntity
}

func notFound(what string) *apiError {
	return newError(http.StatusNotFound, codeNotFound, what+" not found")
}

func unauthorized(msg string) *apiError {
	e := newError(http.StatusUnauthorized, codeUnauthorized, msg)
	e.Header = http.Header{"Www-Authenticate": {`Bearer realm="crewcast"`}}
	return e
}

// publicError turns any error into what the client may see. This is the
// one place where errors become HTTP statuses; internal reports whether
// the cause is an internal failure worth logging.
func publicError(err error) (e *apiError, internal bool) {
	var ae *apiError
	var ve *tracker.ValidationError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae, false
	case errors.As(err, &ve):
		e := &apiError{Status: unprocessableOr400(ve.Fields), Code: codeInvalidRequest, Message: ve.Error(), Fields: ve.Fields}
		if ve.Total > len(ve.Fields) {
			e.FieldsTotal = ve.Total
			e.Message += fmt.Sprintf("; and %d more", ve.Total-len(ve.Fields))
		}
		return e, false
	case errors.As(err, &mbe):
		return newError(http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("request body larger than %d bytes", mbe.Limit)), false
	case errors.Is(err, tracker.ErrNotFound), errors.Is(err, actor.ErrNotFound):
		return notFound("group"), false
	case errors.Is(err, group.ErrNoRecipient):
		return notFound("recipient"), false
	case errors.Is(err, tracker.ErrNoneReachable):
		return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalidRequest, Message: err.Error(),
			Fields: []group.FieldError{{Field: "crews", Message: err.Error()}}}, false
	case errors.Is(err, tracker.ErrIdempotencyMismatch):
		return newError(http.StatusUnprocessableEntity, codeIdempotency,
			"this Idempotency-Key was already used with a different request"), false
	case errors.Is(err, tracker.ErrSuppressed):
		return newError(http.StatusConflict, codeSuppressed,
			"the number is on the suppression list; remove the suppression first to send to it again"), false
	case errors.Is(err, group.ErrState):
		// The domain's own state messages ("recipient is sent; only failed
		// recipients can be retried") help operators and carry no
		// internals; anything wrapped around them might, so only an
		// unwrapped domain message is shown.
		msg := "not allowed in the group's or recipient's current state"
		if strings.HasPrefix(err.Error(), group.ErrState.Error()) {
			msg = err.Error()
		}
		return newError(http.StatusConflict, codeConflict, msg), false
	case errors.Is(err, store.ErrInvalidCursor):
		return invalid("cursor", "not a cursor this server issued"), false
	case errors.Is(err, apikey.ErrInvalidKey):
		return unauthorized("missing, unknown or revoked API key"), false
	case errors.Is(err, tracker.ErrCanceled):
		// The request's own context ended: not a failure of crewcast.
		return newError(http.StatusServiceUnavailable, codeUnavailable, "the request ended before it finished, try again"), false
	}
	// tracker.ErrUnavailable, tracker.ErrClosed, store failures, anything
	// unexpected: the client may retry; the cause stays in our logs.
	return newError(http.StatusServiceUnavailable, codeUnavailable, "temporarily unavailable, try again"), true
}

type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code    string             `json:"code"`
	Message string             `json:"message"`
	Fields  []group.FieldError `json:"fields,omitempty"`
	// FieldsTotal is set when fields lists only the first problems.
	FieldsTotal int `json:"fields_total,omitempty"`
}

// writeError answers with err's public form and logs internal causes once.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, route string, err error) {
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		return // the client went away; there is nobody to answer
	}
	e, internal := publicError(err)
	switch {
	case internal:
		a.log.LogAttrs(r.Context(), slog.LevelError, "request failed",
			slog.String("route", route), slog.String("method", r.Method), slog.String("err", err.Error()))
	case errors.Is(err, tracker.ErrCanceled):
		a.log.LogAttrs(r.Context(), slog.LevelDebug, "request ended before it finished",
			slog.String("route", route), slog.String("method", r.Method), slog.String("err", err.Error()))
	}
	if sw, ok := w.(*statusWriter); ok && sw.wrote {
		return // a streaming response already started; the handler ended it
	}
	for k, vs := range e.Header {
		w.Header()[k] = vs
	}
	writeJSON(w, e.Status, errorBody{Error: errorJSON{Code: e.Code, Message: e.Message, Fields: e.Fields, FieldsTotal: e.FieldsTotal}})
}

// writeJSON writes v as the JSON response body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v) // a write error means the client left; nothing to do
}

// decodeJSON reads the request body (at most limit bytes) as one JSON value
// into dst, refusing unknown fields and trailing data.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return newError(http.StatusUnsupportedMediaType, codeUnsupportedMedia, "request body must be application/json")
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return newError(http.StatusBadRequest, codeInvalidJSON, "unexpected data after the JSON value")
	}
	return nil
}

// jsonError describes a decoding failure, naming the field when it can.
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var mbe *http.MaxBytesError
	var ae *apiError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.As(err, &ae): // a field's own decoder refused it (a list over its limit)
		return ae
	case errors.Is(err, io.EOF):
		return newError(http.StatusBadRequest, codeInvalidJSON, "request body is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return newError(http.StatusBadRequest, codeInvalidJSON, "request body is truncated JSON")
	case errors.As(err, &se):
		return newError(http.StatusBadRequest, codeInvalidJSON, fmt.Sprintf("request body is not valid JSON (at byte %d)", se.Offset))
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(body)"
		}
		msg := "must be " + jsonKind(te.Type.Kind().String())
		return &apiError{Status: http.StatusBadRequest, Code: codeInvalidJSON, Message: field + ": " + msg,
			Fields: []group.FieldError{{Field: field, Message: msg}}}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &apiError{Status: http.StatusBadRequest, Code: codeInvalidJSON, Message: field + ": unknown field",
			Fields: []group.FieldError{{Field: field, Message: "unknown field"}}}
	}
	return newError(http.StatusBadRequest, codeInvalidJSON, "request body could not be decoded")
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	}
	return "a different type"
}
