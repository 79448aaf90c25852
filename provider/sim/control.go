package sim

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// routes wires the provider APIs and the control plane.
func (s *Sim) routes() *http.ServeMux {
	mux := http.NewServeMux()
	tnx := func(h http.HandlerFunc) http.HandlerFunc { return s.outageGate(providerTelnyx, s.telnyxAuth(h)) }
	tw := func(h http.HandlerFunc) http.HandlerFunc { return s.outageGate(providerTwilio, s.twilioAuth(h)) }
	mux.HandleFunc("POST /v2/messages", tnx(s.telnyxSend(false)))
	mux.HandleFunc("POST /v2/messages/group_mms", tnx(s.telnyxSend(true)))
	mux.HandleFunc("GET /v2/messages/{id}", tnx(s.telnyxGet))
	mux.HandleFunc("GET /v2/messages/group/{id}", tnx(s.telnyxGetGroup))
	mux.HandleFunc("GET /v2/detail_records", tnx(s.telnyxDetailRecords)) // records.go
	mux.HandleFunc("POST /2010-04-01/Accounts/{sid}/Messages.json", tw(s.twilioSend))
	mux.HandleFunc("GET /2010-04-01/Accounts/{sid}/Messages/{file}", tw(s.twilioGet))
	mux.HandleFunc("POST /2010-04-01/Accounts/{sid}/Calls.json", tw(s.twilioCall))
	mux.HandleFunc("POST /v2/texml/calls/{connection}", tnx(s.telnyxCall))
	mux.HandleFunc("GET /2010-04-01/Accounts/{sid}/Messages.json", tw(s.twilioList)) // records.go

	control := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, s.control(h)) }
	control("GET /sim/keys", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Keys())
	})
	control("GET /sim/ledger", func(w http.ResponseWriter, r *http.Request) {
		sends := s.Ledger()
		if sends == nil {
			sends = []Send{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"sends": sends})
	})
	control("GET /sim/ledger/duplicates", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"duplicates": s.Duplicates()})
	})
	control("GET /sim/mail", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"mail": s.receivedMail()})
	})
	control("GET /sim/calls", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"calls": s.Calls()})
	})
	control("POST /sim/voice/script", s.handleVoiceScript)
	control("POST /sim/inbound", s.handleInbound)
	control("GET /sim/faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Faults())
	})
	control("POST /sim/faults", s.handleSetFaults)
	control("POST /sim/reset", func(w http.ResponseWriter, r *http.Request) {
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// control guards a control-plane route. Binding to loopback is not
// enough: any web page the simulator's user opens can send simple
// requests (text/plain POSTs, GETs) to a loopback port. So a request needs
// the control token (Authorization: Bearer, compared in constant time),
// must not come from another origin (Origin, Sec-Fetch-Site), and a POST
// must be JSON, which a page cannot send cross-origin without a preflight
// the simulator never answers.
func (s *Sim) control(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if crossOrigin(r) {
			writeSimError(w, http.StatusForbidden, "cross_origin", "cross-origin requests are refused")
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="crewcast sim"`)
			writeSimError(w, http.StatusUnauthorized, "unauthorized", "the /sim routes need Authorization: Bearer <control token>")
			return
		}
		if r.Method == http.MethodPost {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				writeSimError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "send Content-Type: application/json")
				return
			}
		}
		h(w, r)
	})
}

// crossOrigin reports a browser request from another origin: an Origin
// header that is not this host's, or Sec-Fetch-Site other than
// same-origin or none (typed by the user).
func crossOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || u.Host != r.Host || (u.Scheme != "http" && u.Scheme != "https")
}

func writeSimError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// decodeStrict decodes one JSON object and rejects unknown fields, so a
// misspelt knob is an error rather than silently ignored.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

func (s *Sim) handleInbound(w http.ResponseWriter, r *http.Request) {
	var in InboundMessage
	if err := decodeStrict(w, r, &in); err != nil {
		writeSimError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	id, err := s.Inject(r.Context(), in)
	switch {
	case errors.Is(err, errQueueFull):
		writeSimError(w, http.StatusServiceUnavailable, "queue_full", err.Error())
		return
	case errors.Is(err, ErrStopped):
		writeSimError(w, http.StatusServiceUnavailable, "stopped", err.Error())
		return
	case err != nil:
		writeSimError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"id": id})
}

// handleSetFaults applies the fields present in the body over the current
// knobs and answers with the result.
func (s *Sim) handleSetFaults(w http.ResponseWriter, r *http.Request) {
	body := setOutageBody{Faults: s.Faults()}
	if err := decodeStrict(w, r, &body); err != nil {
		writeSimError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	f, err := body.apply()
	if err == nil {
		err = s.SetFaults(f)
	}
	if err != nil {
		writeSimError(w, http.StatusUnprocessableEntity, "invalid_faults", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s.Faults())
}
