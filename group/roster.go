package group

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/nyaruka/phonenumbers"

	"github.com/crewcast/crewcast"
)

// Limits of a create request. MaxRecipients is docs/design.md §11's group size;
// MaxFieldErrors bounds how many problems one answer lists (the rest are
// counted), so a huge bad request cannot make a huge answer.
const (
	MaxRecipients  = crewcast.MaxIndividualRecipients
	MaxFieldErrors = 100
	MaxMediaURLs   = 10   // Twilio refuses more (error 21623)
	maxURLLen      = 2048 // longer URLs are refused by common servers and CDNs
)

// RecipientInput is one recipient as a client gave it.
type RecipientInput struct {
	Number string `json:"number"`
	Name   string `json:"name,omitempty"`
	// ContactID and Fields come from the contact this recipient is (set by
	// the caller who resolved crews, tags and contacts; never decoded from
	// a client).
	ContactID string            `json:"-"`
	Fields    map[string]string `json:"-"`
	// Timezone is the recipient's IANA zone, for quiet hours (schedule.go).
	Timezone string `json:"timezone,omitempty"`
}

// Request is a client's request to create a group message.
type Request struct {
	From string `json:"from"`
	// Pool, instead of From, sends from the numbers of a sender pool
	// (docs/design.md §16); the caller assigns each recipient's number.
	Pool       string           `json:"pool,omitempty"`
	To         []string         `json:"to,omitempty"`
	Recipients []RecipientInput `json:"recipients,omitempty"`
	Text       string           `json:"text"`
	MediaURLs  []string         `json:"media_urls,omitempty"`
	Mode       crewcast.Mode    `json:"mode,omitempty"`
	// Crews, Tags and Contacts name the directory entries the client
	// chose (docs/design.md §11); the caller resolves them into Resolved.
	Crews    []string `json:"crews,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Contacts []string `json:"contacts,omitempty"`
	// Template names the saved template whose text and responses were
	// used (the caller copies them into Text and Responses).
	Template string `json:"template,omitempty"`
	// Responses are the answers asked for; ResponseHint (default true)
	// appends "Reply 1 Coming, 2 …" to the text.
	Responses    []Option `json:"responses,omitempty"`
	ResponseHint *bool    `json:"response_hint,omitempty"`
	Quorum       *Quorum  `json:"quorum,omitempty"`
	// Resolved are the recipients the directory selectors stand for, in
	// order (crews' members, tags', contacts'); the roster puts them
	// before To/Recipients (docs/design.md §15), a number given twice
	// where it first appears. Not part of the client's request, so not of
	// its hash.
	Resolved []RecipientInput `json:"-"`
	// Known are saved contacts by E.164 number: a raw number that is one
	// gets its contact id, fields and (when none was given) name.
	Known map[string]RecipientInput `json:"-"`
	// PolicyInput: send_at, priority, followup, escalate, quiet_hours.
	PolicyInput
	// CalloutInput: waves, confirmed_text, filled_text (PlanCallout).
	CalloutInput
	// ExactGiven says the client wrote quorum.exact (true or false): with
	// waves, exact is the default only when it did not.
	ExactGiven bool `json:"-"`
}

// UsesDirectory reports whether the request names crews, tags or contacts.
func (r Request) UsesDirectory() bool {
	return len(r.Crews)+len(r.Tags)+len(r.Contacts) > 0
}

// FieldError names the request field that is wrong and why.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
	// Input is what the client sent for this field, verbatim, when the
	// field is one value (a number): the board and the CLI show it as it
	// was typed, not as it was cleaned.
	Input string `json:"input,omitempty"`
	// Position is the 1-based character (code point) index of the first
	// character a text may not hold (CheckText); 0 otherwise.
	Position int `json:"position,omitempty"`
	// Unprocessable marks a well-formed value the request cannot be
	// carried out with (a send_at in the past): HTTP 422 rather than 400
	// when every field error of a request is one.
	Unprocessable bool `json:"-"`
}

func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// DefaultRegion is the region assumed for numbers written without a
// country code.
const DefaultRegion = "US"

// NormalizeNumber returns a number in E.164 form, or an error saying why it
// is not a possible phone number. Numbers without a leading + are read as
// DefaultRegion numbers.
func NormalizeNumber(s string) (string, error) {
	s = strings.TrimSpace(s)
	if isNANPE164(s) {
		// Already canonical: libphonenumber returns it unchanged (the
		// property test holds this), at a fraction of the cost — a
		// 10,000-recipient group is mostly such numbers.
		return s, nil
	}
	if s == "" {
		return "", fmt.Errorf("empty number")
	}
	n, err := phonenumbers.Parse(s, DefaultRegion)
	if err != nil {
		return "", fmt.Errorf("not a phone number")
	}
	// Possible, not valid: fictional 555-01xx numbers must work in demos
	// and tests, and carriers are the final judge of validity anyway.
	if !phonenumbers.IsPossibleNumber(n) {
		return "", fmt.Errorf("not a possible phone number")
	}
	return phonenumbers.Format(n, phonenumbers.E164), nil
}

// IsCanonical reports whether NormalizeNumber returns s as it is without
// parsing it (a NANP number already in E.164, no spaces): a caller that
// remembers what numbers normalize to need not remember these.
func IsCanonical(s string) bool { return isNANPE164(s) }

// Plan validates a request and builds the Created event that starts the
// group: numbers normalized to E.164, duplicates merged (the first name
// wins), suppressed numbers marked so they are never sent to. It returns
// the problems it finds, each naming its field, at most MaxFieldErrors.
func Plan(id string, req Request, settings Settings, suppressed map[string]bool, now time.Time) (Created, []FieldError) {
	c, errs, _ := PlanWith(id, req, settings, suppressed, now, NormalizeNumber)
	return c, errs
}

// TooMany returns the error for a request of n recipients when n is over
// MaxRecipients, else nil. Callers check it before parsing any number, so
// an oversized request costs nothing more.
func TooMany(n int) *FieldError {
	if n <= MaxRecipients {
		return nil
	}
	return &FieldError{Field: "to", Message: fmt.Sprintf("at most %d recipients per group, got %d", MaxRecipients, n)}
}

// TooMany is the package TooMany for a whole request, naming the field
// the client used ("to" or "recipients").
func (r Request) TooMany() *FieldError {
	e := TooMany(len(r.To) + len(r.Recipients) + len(r.Resolved))
	if e != nil && len(r.To) == 0 {
		e.Field = "recipients"
	}
	return e
}

// problems collects field errors: the first MaxFieldErrors, and how many
// there were in all.
type problems struct {
	list  []FieldError
	total int
}

func (p *problems) add(e FieldError) {
	p.total++
	if len(p.list) < MaxFieldErrors {
		p.list = append(p.list, e)
	}
}

// PlanWith is Plan with the number normalizer given, so that a caller who
// already normalized the numbers (to look up suppressions) does not parse
// each one twice. It also returns how many problems there were in all
// (the list stops at MaxFieldErrors).
func PlanWith(id string, req Request, settings Settings, suppressed map[string]bool, now time.Time,
	normalize func(string) (string, error)) (Created, []FieldError, int) {
	inputs := req.Recipients
	field := "recipients"
	if len(req.To) > 0 {
		field = "to"
	}
	if e := req.TooMany(); e != nil {
		return Created{}, []FieldError{*e}, 1
	}
	var errs problems
	from, err := normalize(req.From)
	if err != nil {
		msg := "use international format, such as +15550100000"
		if strings.TrimSpace(req.From) != "" {
			msg = fmt.Sprintf("%q is %s; %s", strings.TrimSpace(req.From), err, msg)
		}
		errs.add(FieldError{Field: "from", Message: msg, Input: req.From})
	}
	mode := req.Mode
	if mode == "" {
		mode = crewcast.ModeIndividual
	}
	if mode != crewcast.ModeIndividual && mode != crewcast.ModeGroupMMS {
		errs.add(FieldError{Field: "mode", Message: fmt.Sprintf("must be %q or %q", crewcast.ModeIndividual, crewcast.ModeGroupMMS)})
	}
	if strings.TrimSpace(req.Text) == "" && len(req.MediaURLs) == 0 {
		errs.add(FieldError{Field: "text", Message: "required (or media_urls)"})
	}
	var tmpl *Template
	if HasVariables(req.Text) {
		t, err := ParseTemplate(req.Text)
		if te, ok := err.(*TemplateError); ok {
			errs.add(FieldError{Field: "text", Message: te.Error(), Input: te.Var})
		}
		tmpl = t
	}
	for _, e := range CheckOptions("responses", req.Responses, req.Quorum) {
		errs.add(e)
	}
	for _, e := range CheckTexts(req) {
		errs.add(e)
	}
	hint := ""
	if len(req.Responses) > 0 && (req.ResponseHint == nil || *req.ResponseHint) {
		hint = "\n" + Hint(req.Responses)
	}
	baseText := req.Text + hint
	if len(req.MediaURLs) > MaxMediaURLs {
		errs.add(FieldError{Field: "media_urls", Message: fmt.Sprintf("at most %d media URLs, got %d", MaxMediaURLs, len(req.MediaURLs))})
	}
	for i, u := range req.MediaURLs {
		if err := CheckMediaURL(u); err != nil {
			errs.add(FieldError{Field: fmt.Sprintf("media_urls[%d]", i), Message: err.Error()})
		}
	}
	if len(req.To) > 0 {
		if len(req.Recipients) > 0 {
			errs.add(FieldError{Field: "to", Message: "give either to or recipients, not both"})
		}
		inputs = make([]RecipientInput, len(req.To))
		for i, n := range req.To {
			inputs[i] = RecipientInput{Number: n}
		}
	}
	// The roster is in the order given: the directory's people (crews'
	// members in crew order, then tags', then contacts') first, then
	// to/recipients (docs/design.md §15: a callout's waves text it in this
	// order). A number given twice keeps its first place; a name given
	// with it in recipients still wins over its contact's.
	directory := len(req.Resolved)
	var named map[string]string // number → the name recipients gave it
	switch {
	case directory == 0:
	case len(inputs) == 0:
		inputs = req.Resolved
	default:
		for _, in := range inputs {
			name := strings.TrimSpace(in.Name)
			n, err := normalize(in.Number)
			if err != nil {
				continue
			}
			if _, ok := named[n]; !ok {
				if named == nil {
					named = make(map[string]string)
				}
				named[n] = name
			}
		}
		inputs = append(slices.Clip(req.Resolved), inputs...)
	}
	roster := make([]RosterEntry, 0, len(inputs))
	seen := make(map[string]bool, len(inputs))
	// fieldOf names input i in a problem (only then: a 100,000-person
	// roster would format 100,000 names for nothing).
	explicitField := func(i int) string { return fmt.Sprintf("%s[%d]", field, i-directory) }
	fieldOf := func(i int) string {
		if i < directory {
			return "contacts"
		}
		f := explicitField(i)
		if field == "recipients" {
			f += ".number"
		}
		return f
	}
	for i, in := range inputs {
		n, err := normalize(in.Number)
		if err != nil {
			msg := err.Error()
			if strings.TrimSpace(in.Number) != "" {
				msg = fmt.Sprintf("%q is %s", strings.TrimSpace(in.Number), err)
			}
			errs.add(FieldError{Field: fieldOf(i), Message: msg, Input: in.Number})
			continue
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		if n == from {
			f := "contacts"
			if i >= directory {
				f = explicitField(i)
			}
			errs.add(FieldError{Field: f, Message: "is the sender's own number", Input: in.Number})
			continue
		}
		if name, ok := named[n]; ok && i < directory && name != "" {
			in.Name = name
		}
		if k, ok := req.Known[n]; ok && in.ContactID == "" {
			in.ContactID, in.Fields = k.ContactID, k.Fields
			if strings.TrimSpace(in.Name) == "" {
				in.Name = k.Name
			}
			if in.Timezone == "" {
				in.Timezone = k.Timezone
			}
		}
		// A contact's time zone rides with them (quiet hours, docs/design.md §12);
		// PlanPolicy lets the request override it.
		e := RosterEntry{Number: n, Name: strings.TrimSpace(in.Name), Suppressed: suppressed[n], ContactID: in.ContactID, TZ: in.Timezone}
		if tmpl != nil {
			text, err := tmpl.Render(TemplateVars{Name: e.Name, Fields: in.Fields})
			if err != nil {
				errs.add(FieldError{Field: fieldOf(i), Message: fmt.Sprintf("%s: %v", n, err), Input: in.Number})
				continue
			}
			e.Text = text + hint
		}
		roster = append(roster, e)
	}
	text := frozenTexts(baseText, tmpl != nil, roster)
	if _, seg := Longest(text, roster); seg.Segments > MaxSegments {
		errs.add(FieldError{Field: "text", Message: fmt.Sprintf("%d SMS segments (%s); at most %d: shorten it to %d characters",
			seg.Segments, seg.Encoding, MaxSegments, maxChars(seg.Encoding))})
	}
	if mode == crewcast.ModeGroupMMS && slices.ContainsFunc(roster, func(e RosterEntry) bool { return e.Text != "" }) {
		errs.add(FieldError{Field: "text", Message: "group_mms sends one text to everyone: it cannot use per-recipient variables"})
	}
	switch {
	case len(inputs) == 0:
		errs.add(FieldError{Field: "to", Message: "at least one recipient is required"})
	case mode == crewcast.ModeGroupMMS && len(roster) > crewcast.MaxGroupMMS:
		errs.add(FieldError{Field: field, Message: fmt.Sprintf("group_mms allows at most %d recipients, got %d", crewcast.MaxGroupMMS, len(roster))})
	}
	if errs.total > 0 {
		return Created{}, errs.list, errs.total
	}
	var quorum *QuorumState
	if req.Quorum != nil {
		quorum = &QuorumState{Quorum: *req.Quorum}
	}
	return Created{
		ID: id, From: from, Text: text, MediaURLs: req.MediaURLs, Mode: mode, At: now,
		Settings: settings.WithDefaults(), Recipients: roster, Responses: req.Responses, Quorum: quorum,
	}, nil, 0
}

// Longest returns the text of a roster that takes the most SMS segments
// (the most units on a tie) and its segmentation: the group's text when
// some recipient is sent it, else the longest rendered one.
func Longest(groupText string, roster []RosterEntry) (string, Segmentation) {
	var best string
	var bestSeg Segmentation
	first := true
	seen := map[string]bool{}
	consider := func(t string) {
		if seen[t] {
			return
		}
		seen[t] = true
		s := Segments(t)
		if first || s.Segments > bestSeg.Segments || (s.Segments == bestSeg.Segments && s.Units > bestSeg.Units) {
			best, bestSeg, first = t, s, false
		}
	}
	usesGroupText := len(roster) == 0
	for _, e := range roster {
		if e.Text == "" {
			usesGroupText = true
			continue
		}
		consider(e.Text)
	}
	if usesGroupText {
		consider(groupText)
	}
	return best, bestSeg
}

// frozenTexts decides what the roster keeps of the rendered texts: when
// every recipient's text is the same, that is the group's text and no
// recipient keeps a copy (a 100,000-recipient group stores its text once);
// otherwise the group's text is the template and each recipient keeps
// their own, except where it equals the group's.
func frozenTexts(base string, rendered bool, roster []RosterEntry) string {
	if !rendered || len(roster) == 0 {
		return base
	}
	same := true
	for _, e := range roster[1:] {
		if e.Text != roster[0].Text {
			same = false
			break
		}
	}
	if same {
		text := roster[0].Text
		for i := range roster {
			roster[i].Text = ""
		}
		return text
	}
	for i := range roster {
		if roster[i].Text == base {
			roster[i].Text = ""
		}
	}
	return base
}

// maxChars is how many plain characters fit in MaxSegments in an encoding.
func maxChars(encoding string) int {
	if encoding == EncodingUCS2 {
		return MaxSegments * ucsPart
	}
	return MaxSegments * gsmPart
}

// CheckMediaURL accepts an absolute https URL whose host is a name or a
// public IP address. The provider fetches media from its own network, so
// this is not a defence of crewcast's network; it keeps operators from
// handing the provider addresses that can only be wrong (loopback,
// private, link-local, cloud metadata) and credentials in URLs. Names are
// not resolved: that would be I/O, and the provider resolves them anyway.
func CheckMediaURL(s string) error {
	if len(s) > maxURLLen {
		return fmt.Errorf("longer than %d characters", maxURLLen)
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() {
		return fmt.Errorf("must be an absolute https:// URL")
	}
	if u.Scheme != "https" {
		return fmt.Errorf("must be an https:// URL (got %s://)", u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("must not carry a user name or password")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return fmt.Errorf("has no host")
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || host == "metadata.google.internal" ||
		strings.HasSuffix(host, ".internal") {
		return fmt.Errorf("host %s is not reachable from the provider", host)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || cgnat.Contains(ip) {
			return fmt.Errorf("host %s is a loopback, private, link-local or metadata address", host)
		}
		return nil
	}
	if numericHost(host) {
		return fmt.Errorf("host %s is written as a number; use a name or a dotted IP address", host)
	}
	return nil
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598),
// private in all but name.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// numericHost reports whether every label of host is a number (decimal,
// octal or 0x hex): forms such as 2130706433 or 0x7f.1 that some resolvers
// read as IPv4 addresses (127.0.0.1) and netip does not.
func numericHost(host string) bool {
	for _, label := range strings.Split(host, ".") {
		l := strings.TrimPrefix(label, "0x")
		if l == "" {
			return false
		}
		hex := l != label
		for _, c := range l {
			digit := c >= '0' && c <= '9'
			if !digit && !(hex && (c >= 'a' && c <= 'f')) {
				return false
			}
		}
	}
	return true
}

// isNANPE164 reports whether s is "+1" and ten digits whose area code does
// not start with 0 or 1: a possible North American number already in
// E.164 form.
func isNANPE164(s string) bool {
	if len(s) != 12 || s[0] != '+' || s[1] != '1' || s[2] < '2' || s[2] > '9' {
		return false
	}
	for i := 3; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
