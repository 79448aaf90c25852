// Package email is the email channel of a follow-up ladder
// (docs/design.md §17): the SMTP configuration (CREWCAST_SMTP_URL,
// CREWCAST_EMAIL_FROM), the mail an email step sends (a plain-text and an
// HTML part, one link per response option to {public_url}/a/{token}, a
// List-Unsubscribe header), the signed answer and unsubscribe tokens, and
// an SMTP sender built on github.com/wneessen/go-mail that says, like a
// provider, whether a failed send certainly did not go out.
//
// It does no logging: addresses and texts are personal data.
package email
