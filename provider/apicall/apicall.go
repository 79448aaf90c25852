// Package apicall makes one provider API request and classifies its
// transport failures the way crewcast's never-twice rule needs: a request
// that never obtained a connection certainly did not reach the provider
// (safe to resend), while one that failed after it may have been acted on
// (uncertain). Provider adapters build their own requests (auth, body) and
// interpret the answer; they share only this step. Nothing is retried.
package apicall

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/crewcast/crewcast"
)

// MaxResponseBytes caps how much of an API response is read.
const MaxResponseBytes = 1 << 20

// Response is what the provider answered.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends req once with hc. A transport error comes back as a
// *crewcast.SendError of class ClassNotSent when no connection was ever
// obtained, else ClassUncertain; so does a response whose body cannot be
// read whole (the status line arrived, so the request was received, but
// what the provider did with it is unknown).
func Do(hc *http.Client, provider string, req *http.Request) (Response, error) {
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := hc.Do(req)
	if err != nil {
		class := crewcast.ClassUncertain
		if !connected.Load() {
			class = crewcast.ClassNotSent
		}
		return Response{}, &crewcast.SendError{Provider: provider, Class: class, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err == nil && len(body) > MaxResponseBytes {
		err = fmt.Errorf("response larger than %d bytes", MaxResponseBytes)
	}
	if err != nil {
		return Response{Status: resp.StatusCode, Header: resp.Header}, &crewcast.SendError{Provider: provider,
			HTTPStatus: resp.StatusCode, Class: crewcast.ClassUncertain, Err: fmt.Errorf("read response: %w", err)}
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}
