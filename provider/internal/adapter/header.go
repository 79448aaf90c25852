package adapter

import (
	"net/http"
	"strings"
)

// HeaderValue returns the first non-empty value of the header name in h,
// ignoring case even when h was built by hand with non-canonical keys
// (http.Header.Get only finds canonical ones). Webhook verifiers use it for
// their signature headers.
func HeaderValue(h http.Header, name string) string {
	if v := h.Get(name); v != "" {
		return v
	}
	for k, vs := range h {
		if strings.EqualFold(k, name) && len(vs) > 0 && vs[0] != "" {
			return vs[0]
		}
	}
	return ""
}
