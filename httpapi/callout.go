package httpapi

import (
	"net/http"
	"strings"

	"github.com/crewcast/crewcast/group"
)

// notYetSupported refuses the callout fields with a 422 naming each one:
// package group decides waves and exact quotas, but the tracker does not
// yet send waves, select or claim auto-replies, so a group asking for
// them would not run as asked.
func notYetSupported(body createRequest) error {
	var errs []group.FieldError
	add := func(field string) {
		errs = append(errs, group.FieldError{Field: field, Message: "not yet supported"})
	}
	if body.Waves != nil {
		add("waves")
	}
	if body.Quorum != nil && body.Quorum.Exact {
		add("quorum.exact")
	}
	if body.ConfirmedText != nil {
		add("confirmed_text")
	}
	if body.FilledText != nil {
		add("filled_text")
	}
	if len(errs) == 0 {
		return nil
	}
	names := make([]string, len(errs))
	for i, e := range errs {
		names[i] = e.Field
	}
	return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalidRequest,
		Message: strings.Join(names, ", ") + ": not yet supported (callouts that fill are not carried out by this server yet)",
		Fields:  errs}
}
