package webhookout

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"

	"github.com/crewcast/crewcast/store"
)

// Error classes of a delivery attempt (store.WebhookAttempt.Error): all
// the attempts log says about a failure. The transport's own error would
// name the address a host resolved to and tell a refused port from an
// open one, and an answer's body may come from an internal service
// (--webhook-allow-private): neither is kept.
const (
	ErrClassDNS        = "dns"             // the host name did not resolve
	ErrClassConnect    = "connect"         // no connection, or it broke before an answer
	ErrClassTLS        = "tls"             // the TLS handshake or certificate failed
	ErrClassTimeout    = "timeout"         // no answer in time
	ErrClassBlocked    = "blocked_address" // the destination is an address webhooks may not reach
	ErrClassHTTPStatus = "http_status"     // an answer that is not a 2xx (see the status code)
	ErrClassInternal   = "internal"        // crewcast could not sign the request
)

var errClasses = map[string]bool{ErrClassDNS: true, ErrClassConnect: true, ErrClassTLS: true, ErrClassTimeout: true,
	ErrClassBlocked: true, ErrClassHTTPStatus: true, ErrClassInternal: true}

// errorClass classifies a failed request (no answer).
func errorClass(err error) string {
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, ErrRefused):
		return ErrClassBlocked
	case errors.As(err, &dnsErr):
		return ErrClassDNS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ErrClassTimeout
	case isTLSError(err):
		return ErrClassTLS
	}
	return ErrClassConnect
}

func isTLSError(err error) bool {
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var alertErr tls.AlertError
	var authErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidErr x509.CertificateInvalidError
	return errors.As(err, &certErr) || errors.As(err, &recordErr) || errors.As(err, &alertErr) ||
		errors.As(err, &authErr) || errors.As(err, &hostErr) || errors.As(err, &invalidErr) ||
		// net/http's answer to a plain-HTTP server behind an https URL.
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// ShownError is the error class the attempts list shows for an attempt.
// Attempts recorded before the classes existed hold the transport's text
// (addresses, ports): they are shown as the class that text stands for.
func ShownError(result, stored string) string {
	switch {
	case errClasses[stored]:
		return stored
	case result == store.AttemptOK:
		return ""
	case result == store.AttemptHTTP:
		return ErrClassHTTPStatus
	case result == store.AttemptRefused:
		return ErrClassBlocked
	case result == store.AttemptInternal:
		return ErrClassInternal
	case strings.Contains(stored, "no such host"), strings.Contains(stored, "lookup "):
		return ErrClassDNS
	case strings.Contains(stored, "timeout"), strings.Contains(stored, "deadline exceeded"):
		return ErrClassTimeout
	case strings.Contains(stored, "tls:"), strings.Contains(stored, "x509:"):
		return ErrClassTLS
	}
	return ErrClassConnect
}
