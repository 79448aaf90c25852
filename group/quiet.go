package group

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	// The zone database travels with the binary: quiet hours must read the
	// same local time on a host without /usr/share/zoneinfo (containers).
	_ "time/tzdata"
)

// QuietHours is a daily window of local wall-clock time, [Start, End) in
// minutes after midnight; Start > End crosses midnight ("21:00-07:00").
type QuietHours struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// QuietOff is the value that turns quiet hours off for a group.
const QuietOff = "off"

// ParseQuietHours reads "HH:MM-HH:MM"; "off" (or "") is nil.
func ParseQuietHours(s string) (*QuietHours, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == QuietOff {
		return nil, nil
	}
	from, to, ok := strings.Cut(s, "-")
	if !ok {
		return nil, fmt.Errorf("quiet hours must look like 22:00-06:30 or be %q", QuietOff)
	}
	a, err := parseClock(from)
	if err != nil {
		return nil, err
	}
	b, err := parseClock(to)
	if err != nil {
		return nil, err
	}
	if a == b {
		return nil, fmt.Errorf("quiet hours %q start and end at the same time", s)
	}
	return &QuietHours{Start: a, End: b}, nil
}

func parseClock(s string) (int, error) {
	hh, mm, ok := strings.Cut(strings.TrimSpace(s), ":")
	h, err1 := strconv.Atoi(hh)
	m, err2 := strconv.Atoi(mm)
	if !ok || err1 != nil || err2 != nil || len(mm) != 2 || h < 0 || h > 23 || m < 0 || m > 59 {
		return 0, fmt.Errorf("%q is not a time of day (HH:MM, 00:00 to 23:59)", s)
	}
	return h*60 + m, nil
}

// String is the "HH:MM-HH:MM" form.
func (q QuietHours) String() string {
	return fmt.Sprintf("%02d:%02d-%02d:%02d", q.Start/60, q.Start%60, q.End/60, q.End%60)
}

// contains reports whether minute-of-day m is inside the window.
func (q QuietHours) contains(m int) bool {
	if q.Start < q.End {
		return m >= q.Start && m < q.End
	}
	return m >= q.Start || m < q.End
}

// Until returns, when t falls in the quiet hours read in loc, the first
// instant after t at which they end; ok is false outside them. Both DST
// transitions are handled: the end is the wall-clock time End on the
// right local day; if that wall time does not exist (spring forward) or
// comes twice (fall back), the answer is still after t and no later than
// the window's length in wall-clock minutes from t.
func (q QuietHours) Until(t time.Time, loc *time.Location) (time.Time, bool) {
	local := t.In(loc)
	m := local.Hour()*60 + local.Minute()
	if !q.contains(m) {
		return time.Time{}, false
	}
	y, mo, d := local.Date()
	if q.Start > q.End && m >= q.Start {
		d++ // before midnight: the window ends tomorrow
	}
	until := time.Date(y, mo, d, q.End/60, q.End%60, 0, 0, loc)
	if u := until.In(loc); u.Hour()*60+u.Minute() != q.End {
		// End's wall time is skipped that night (spring forward) and
		// time.Date answered a time before the jump: the window ends at
		// the jump, the first instant whose wall time is past End.
		if _, jump := until.ZoneBounds(); !jump.IsZero() {
			until = jump
		}
	}
	if !until.After(t) {
		// End's wall time comes twice (fall back) and t is past its first
		// occurrence: wait the wall-clock minutes left.
		left := (q.End - m + 1440) % 1440
		until = t.Truncate(time.Minute).Add(time.Duration(left) * time.Minute)
	}
	return until, true
}

var zones sync.Map // name → *time.Location

// LoadZone returns the IANA zone of that name ("" is UTC), cached. The
// zone database is embedded, so the answer does not depend on the host.
func LoadZone(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		return nil, fmt.Errorf("%q is not an IANA time zone", name)
	}
	zones.Store(name, l)
	return l, nil
}

// zone is the recipient's zone: its own, else the policy's default, else
// UTC (zones are checked when the group is created).
func (g *Group) zone(r *Recipient) *time.Location {
	name := r.TZ
	if name == "" && g.Policy != nil {
		name = g.Policy.Timezone
	}
	l, err := LoadZone(name)
	if err != nil {
		return time.UTC
	}
	return l
}

// quietApplies reports whether the group has quiet hours to obey.
func (g *Group) quietApplies() bool {
	return g.Policy != nil && g.Policy.Quiet != nil && g.Policy.Priority != PriorityCritical
}

// quietUntil reports whether t is in r's quiet hours and when they end.
func (g *Group) quietUntil(r *Recipient, t time.Time) (time.Time, bool) {
	if !g.quietApplies() {
		return time.Time{}, false
	}
	return g.Policy.Quiet.Until(t, g.zone(r))
}

// quietAt reports whether t is in r's quiet hours.
func (g *Group) quietAt(r *Recipient, t time.Time) bool {
	_, ok := g.quietUntil(r, t)
	return ok
}
