package group

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/crewcast/crewcast"
)

// Reply codes (docs/design.md §15): a person with several open groups from
// one sender number gets a letter per group (A, B, …); "1A", "1 A", "A1"
// and "a 1" then choose option 1 of group A. This file is the pure part:
// parsing, the coded hint, the listing of open requests, the choice of a
// free letter. Where codes are kept and how replies are routed by them is
// the tracker's (tracker/replycodes.go).

// MaxCodes is how many letters there are: A to Z.
const MaxCodes = 26

// CodedGroup is one group a coded reply may name: its letter and the
// options a reply chooses from.
type CodedGroup struct {
	Code    string
	Options []Option
}

// codeSeparators may stand between the answer and the letter ("1-A",
// "A:1", "1/A", "1, A").
const codeSeparators = " -:./,_#"

// ParseCode reads a coded answer: the option of one of groups followed or
// preceded by that group's letter, in any case, with or without a
// separator ("1A", "1 A", "a1", "A 1", "yes b", "B: Coming"). It returns
// the letter and the chosen option's key. A reply that could be read as
// two different answers ("AB" when A and B are both letters and both
// option keys) is no coded answer, nor is STOP, START or HELP.
func ParseCode(text string, groups []CodedGroup) (code, key string, ok bool) {
	if len(groups) == 0 || ParseKeyword(text) != "" {
		return "", "", false
	}
	t := normalizeReply(text)
	if t == "" || len(t) > 64 {
		return "", "", false
	}
	type match struct{ code, key string }
	var found []match
	try := func(letter, answer string) {
		answer = strings.Trim(answer, codeSeparators)
		if answer == "" || letter == "" {
			return
		}
		for _, g := range groups {
			if !strings.EqualFold(g.Code, letter) {
				continue
			}
			if k := ParseResponse(g.Options, answer); k != "" {
				m := match{g.Code, k}
				for _, f := range found {
					if f == m {
						return
					}
				}
				found = append(found, m)
			}
		}
	}
	// The letter last: "1A", "1 a", "coming B".
	last, n := utf8.DecodeLastRuneInString(t)
	if isCodeLetter(last) {
		rest := t[:len(t)-n]
		// "1A" or "1 A": a letter glued to a word is a code only when
		// what precedes it does not end in a letter ("yesA" is not).
		if gluedOK(rest, true) {
			try(string(last), rest)
		}
	}
	// The letter first: "A1", "a 1", "B: coming".
	first, n := utf8.DecodeRuneInString(t)
	if isCodeLetter(first) {
		rest := t[n:]
		if gluedOK(rest, false) {
			try(string(first), rest)
		}
	}
	if len(found) != 1 {
		return "", "", false
	}
	return found[0].code, found[0].key, true
}

// gluedOK reports whether rest, what a reply holds beside a possible
// letter, leaves that letter standing apart: separated, next to a digit or
// a sign, or beside a one-letter answer ("YA"). A letter glued to a word
// ("yesA", "Bye") is part of the word.
func gluedOK(rest string, letterLast bool) bool {
	if rest == "" {
		return false
	}
	var r rune
	if letterLast {
		r, _ = utf8.DecodeLastRuneInString(rest)
	} else {
		r, _ = utf8.DecodeRuneInString(rest)
	}
	return !unicode.IsLetter(r) || utf8.RuneCountInString(rest) == 1
}

func isCodeLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// CodeLetter is the i-th letter (0: "A"), "" past Z.
func CodeLetter(i int) string {
	if i < 0 || i >= MaxCodes {
		return ""
	}
	return string(rune('A' + i))
}

// FreeCode is the first letter not in used, "" when all 26 are.
func FreeCode(used []string) string {
	for i := range MaxCodes {
		l := CodeLetter(i)
		taken := false
		for _, u := range used {
			taken = taken || strings.EqualFold(u, l)
		}
		if !taken {
			return l
		}
	}
	return ""
}

// CodedHint is the hint with a code: "Reply 1A Coming, 2A Can't make it".
func CodedHint(opts []Option, code string) string {
	if len(opts) == 0 {
		return ""
	}
	if code == "" {
		return Hint(opts)
	}
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = o.Key + code + " " + o.Label
	}
	return "Reply " + strings.Join(parts, ", ")
}

// WithCodedHint returns text with its hint (the last line, when it is the
// plain hint of opts) replaced by the coded one. A text without the hint
// (response_hint false) gets none: the person learns the code from the
// listing of open requests.
func WithCodedHint(text string, opts []Option, code string) string {
	h := Hint(opts)
	if code == "" || h == "" {
		return text
	}
	if text == h {
		return CodedHint(opts, code)
	}
	if strings.HasSuffix(text, "\n"+h) {
		return strings.TrimSuffix(text, h) + CodedHint(opts, code)
	}
	return text
}

// OpenRequest is one group in the listing a person gets after a bare
// answer while several of their groups are open.
type OpenRequest struct {
	Code    string
	Text    string // the group's text, its hint left out
	Options []Option
}

// listingExcerpt bounds each request's text in the listing.
const listingExcerpt = 40

// AmbiguousListing is the one message a person gets after a bare answer
// while several groups are open: each request with its code and coded
// hint, in code order, and how to answer.
func AmbiguousListing(reqs []OpenRequest) string {
	rs := append([]OpenRequest(nil), reqs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Code < rs[j].Code })
	var b strings.Builder
	b.WriteString("You have several open requests; which one is your answer for?")
	example := ""
	for _, r := range rs {
		txt := strings.TrimSpace(withoutVariables(WithoutHint(r.Text, r.Options)))
		txt = strings.Join(strings.Fields(txt), " ")
		if utf8.RuneCountInString(txt) > listingExcerpt {
			rr := []rune(txt)
			txt = strings.TrimSpace(string(rr[:listingExcerpt-1])) + "…"
		}
		b.WriteString("\n" + r.Code + ": " + txt)
		if h := CodedHint(r.Options, r.Code); h != "" {
			b.WriteString(" — " + h)
			if example == "" {
				example = r.Options[0].Key + r.Code
			}
		}
	}
	if example != "" {
		b.WriteString("\nReply with the letter, e.g. " + example + ".")
	}
	return b.String()
}

// withoutVariables replaces a template's {{…}} variables with "…": the
// listing has the group's text, not each person's rendering of it.
func withoutVariables(text string) string {
	var b strings.Builder
	for {
		i := strings.Index(text, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(text[i:], "}}")
		if j < 0 {
			break
		}
		b.WriteString(text[:i] + "…")
		text = text[i+j+2:]
	}
	b.WriteString(text)
	return b.String()
}

// WithoutHint returns text without its trailing plain hint, if it has one.
func WithoutHint(text string, opts []Option) string {
	h := Hint(opts)
	if h == "" {
		return text
	}
	if text == h {
		return ""
	}
	return strings.TrimSuffix(text, "\n"+h)
}

// TypeCodesAssigned is the journal type of CodesAssigned.
const TypeCodesAssigned = "recipient.code"

// AssignedCode is the letter one recipient has for this group, and
// whether their text shows it (another of their groups from the same
// number was open when it was sent).
type AssignedCode struct {
	Index int    `json:"i"`
	Code  string `json:"code"`
	Shown bool   `json:"shown,omitempty"`
}

// CodesAssigned gives recipients their reply codes. It is journaled with
// the claim of the sends whose hint shows them, so that a retried send
// shows the same code and a restart reads the same. A recipient's code,
// once given, never changes; Shown only turns on.
type CodesAssigned struct {
	At    time.Time      `json:"at"`
	Codes []AssignedCode `json:"codes"`
}

func (CodesAssigned) Type() string { return TypeCodesAssigned }

func (g *Group) applyCodes(v CodesAssigned) error {
	idx := make([]int, len(v.Codes))
	for k, c := range v.Codes {
		idx[k] = c.Index
	}
	if err := g.checkIndices(v.Type(), idx); err != nil {
		return err
	}
	for _, c := range v.Codes {
		r := g.Recipients[c.Index]
		if r.Code != "" && r.Code != c.Code {
			return fmt.Errorf("apply %s: recipient %d has code %s, not %s", v.Type(), c.Index, r.Code, c.Code)
		}
		r.Code = c.Code
		r.CodeShown = r.CodeShown || c.Shown
		g.markDirty(c.Index)
	}
	return nil
}

// ShownCode is the code recipient i's texts show, "" when none.
func (g *Group) ShownCode(i int) string {
	if i < 0 || i >= len(g.Recipients) || !g.Recipients[i].CodeShown {
		return ""
	}
	return g.Recipients[i].Code
}

// RequestOpen reports whether a group still asks a person for an answer:
// it has response options, is not canceled, its quorum (if any) is not
// met, and it texted them less than window ago (since). Only open groups
// make a bare answer ambiguous; a coded answer reaches its group open or
// not. docs/design.md §15 says why.
func RequestOpen(status crewcast.GroupStatus, a Answers, since, now time.Time, window time.Duration) bool {
	if len(a.Responses) == 0 || status == crewcast.GroupCanceled {
		return false
	}
	if a.Quorum != nil && !a.Quorum.MetAt.IsZero() {
		return false
	}
	return now.Sub(since) < window
}
