package httpapi

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"

	"github.com/crewcast/crewcast/group"
)

// SegmentPrice is a price per SMS segment, kept exact: money is no float.
type SegmentPrice struct {
	rat      *big.Rat
	decimals int // digits after the point, as written
}

// ParseSegmentPrice reads a decimal price per segment: digits with an
// optional fraction ("0.0079", "1", "0.5"); no sign, exponent or currency.
func ParseSegmentPrice(s string) (SegmentPrice, error) {
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || (dot && frac == "") || !digits(whole) || !digits(frac) || len(frac) > 12 {
		return SegmentPrice{}, errors.New(`must be a decimal number such as 0.0079`)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return SegmentPrice{}, errors.New(`must be a decimal number such as 0.0079`)
	}
	return SegmentPrice{rat: r, decimals: len(frac)}, nil
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Cost is n segments at price p, exact, with the price's decimals.
func (p SegmentPrice) Cost(n int) json.Number {
	c := new(big.Rat).Mul(p.rat, new(big.Rat).SetInt64(int64(n)))
	return json.Number(c.FloatString(p.decimals))
}

// previewCost fills the preview's segments, encoding and units (of the
// longest text a recipient gets), segments_total (every texted
// recipient's own text, in segments, summed), cost (when a segment price is
// configured) and ucs2_chars (of text, the text field as written, so the
// indexes point into what the dispatcher typed).
func (a *api) previewCost(out *previewJSON, text string, created group.Created, reached []group.RosterEntry) {
	_, seg := group.Longest(created.Text, reached)
	out.Segments, out.Encoding, out.Units = seg.Segments, seg.Encoding, seg.Units
	segs := map[string]int{}
	total := 0
	for _, e := range reached {
		t := e.Text
		if t == "" {
			t = created.Text
		}
		n, ok := segs[t]
		if !ok {
			n = group.Segments(t).Segments
			segs[t] = n
		}
		total += n
	}
	out.SegmentsTotal = total
	if a.cfg.SegmentPrice != "" {
		p, err := ParseSegmentPrice(a.cfg.SegmentPrice) // validated by New
		if err == nil {
			out.Cost = p.Cost(total)
		}
	}
	out.UCS2Chars = group.UCS2Chars(text)
	if out.UCS2Chars == nil {
		out.UCS2Chars = []group.UCS2Char{}
	}
}
