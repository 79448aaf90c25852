package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
)

// routes wires the provider APIs and the control plane.
func (s *Sim) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/messages", s.telnyxAuth(s.telnyxSend(false)))
	mux.HandleFunc("POST /v2/messages/group_mms", s.telnyxAuth(s.telnyxSend(true)))
	mux.HandleFunc("GET /v2/messages/{id}", s.telnyxAuth(s.telnyxGet))
	mux.HandleFunc("GET /v2/messages/group/{id}", s.telnyxAuth(s.telnyxGetGroup))
	mux.HandleFunc("POST /2010-04-01/Accounts/{sid}/Messages.json", s.twilioAuth(s.twilioSend))
	mux.HandleFunc("GET /2010-04-01/Accounts/{sid}/Messages/{file}", s.twilioAuth(s.twilioGet))

	mux.HandleFunc("GET /sim/keys", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Keys())
	})
	mux.HandleFunc("GET /sim/ledger", func(w http.ResponseWriter, r *http.Request) {
		sends := s.Ledger()
		if sends == nil {
			sends = []Send{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"sends": sends})
	})
	mux.HandleFunc("GET /sim/ledger/duplicates", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"duplicates": s.Duplicates()})
	})
	mux.HandleFunc("POST /sim/inbound", s.handleInbound)
	mux.HandleFunc("GET /sim/faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Faults())
	})
	mux.HandleFunc("POST /sim/faults", s.handleSetFaults)
	mux.HandleFunc("POST /sim/reset", func(w http.ResponseWriter, r *http.Request) {
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
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
	f := s.Faults()
	if err := decodeStrict(w, r, &f); err != nil {
		writeSimError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if err := s.SetFaults(f); err != nil {
		writeSimError(w, http.StatusUnprocessableEntity, "invalid_faults", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s.Faults())
}
