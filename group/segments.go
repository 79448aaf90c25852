package group

import "unicode/utf16"

// SMS encodings (docs/design.md §11 names them for the preview).
const (
	EncodingGSM7 = "GSM-7"
	EncodingUCS2 = "UCS-2"
)

// MaxSegments bounds a message body: 10 concatenated SMS segments, the
// most carriers reliably reassemble (Telnyx and Twilio both advise against
// more). Counting segments, not characters, is what makes 1,600 emoji (48
// UCS-2 segments) too long while 1,530 plain characters (10 GSM-7
// segments) are not.
const MaxSegments = 10

// Segment sizes: a single SMS holds 140 octets; a part of a concatenated
// one loses 6 octets to its header (UDH).
const (
	gsmSingle = 160 // septets
	gsmPart   = 153
	ucsSingle = 70 // UTF-16 code units
	ucsPart   = 67
)

// gsmBasic is the GSM 03.38 default alphabet; gsmExtension the characters
// sent as an escape plus one septet (two septets each).
const (
	gsmBasic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x1bÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
		"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
	gsmExtension = "\f^{}\\[~]|€"
)

var gsmSeptets = func() map[rune]int {
	m := make(map[rune]int, 140)
	for _, r := range gsmBasic {
		m[r] = 1
	}
	for _, r := range gsmExtension {
		m[r] = 2
	}
	return m
}()

// Segmentation is how a text goes out as SMS.
type Segmentation struct {
	Encoding string // EncodingGSM7 or EncodingUCS2
	Segments int    // 0 for an empty text
	// Units is the text's length in the encoding's units: septets for
	// GSM-7 (extension characters count 2), UTF-16 code units for UCS-2.
	Units int
}

// Segments says how text is sent: GSM-7 when every character is in the
// GSM alphabet, else UCS-2; one segment up to 160 septets or 70 code
// units, else parts of 153 or 67 that never split an escape sequence or a
// surrogate pair (so a part may hold one unit less). It is pure, for the
// create rule and the preview alike.
func Segments(text string) Segmentation {
	if text == "" {
		return Segmentation{Encoding: EncodingGSM7}
	}
	sizes := make([]int, 0, len(text))
	gsm := true
	for _, r := range text {
		n, ok := gsmSeptets[r]
		if !ok {
			gsm = false
			break
		}
		sizes = append(sizes, n)
	}
	single, part, enc := gsmSingle, gsmPart, EncodingGSM7
	if !gsm {
		single, part, enc = ucsSingle, ucsPart, EncodingUCS2
		sizes = sizes[:0]
		for _, r := range text {
			sizes = append(sizes, utf16.RuneLen(r))
		}
	}
	units := 0
	for _, n := range sizes {
		units += n
	}
	if units <= single {
		return Segmentation{Encoding: enc, Segments: 1, Units: units}
	}
	segs, fill := 1, 0
	for _, n := range sizes {
		if fill+n > part {
			segs, fill = segs+1, 0
		}
		fill += n
	}
	return Segmentation{Encoding: enc, Segments: segs, Units: units}
}

// UCS2Char is a character that forces UCS-2: Index is its 0-based
// position in the text counted in characters (Unicode code points).
type UCS2Char struct {
	Char  string `json:"char"`
	Index int    `json:"index"`
}

// UCS2Chars lists the characters of text outside the GSM 03.38 alphabet
// and its extension table, in order; nil when the text is GSM-7.
func UCS2Chars(text string) []UCS2Char {
	var out []UCS2Char
	i := 0
	for _, r := range text {
		if _, ok := gsmSeptets[r]; !ok {
			out = append(out, UCS2Char{Char: string(r), Index: i})
		}
		i++
	}
	return out
}
