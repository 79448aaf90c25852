package group

import (
	"strings"
	"testing"
)

// gsm0338Basic is the GSM 03.38 (3GPP TS 23.038 §6.2.1) default alphabet,
// row by row from the published table, code 0x00 to 0x7F. Code 0x1B is
// the escape to the extension table, not a character, and is left out.
var gsm0338Basic = []rune{
	'@', '£', '$', '¥', 'è', 'é', 'ù', 'ì', 'ò', 'Ç', '\n', 'Ø', 'ø', '\r', 'Å', 'å', // 0x00–0x0F
	'Δ', '_', 'Φ', 'Γ', 'Λ', 'Ω', 'Π', 'Ψ', 'Σ', 'Θ', 'Ξ' /* 0x1B ESC */, 'Æ', 'æ', 'ß', 'É', // 0x10–0x1F
	' ', '!', '"', '#', '¤', '%', '&', '\'', '(', ')', '*', '+', ',', '-', '.', '/', // 0x20–0x2F
	'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', ':', ';', '<', '=', '>', '?', // 0x30–0x3F
	'¡', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'N', 'O', // 0x40–0x4F
	'P', 'Q', 'R', 'S', 'T', 'U', 'V', 'W', 'X', 'Y', 'Z', 'Ä', 'Ö', 'Ñ', 'Ü', '§', // 0x50–0x5F
	'¿', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', // 0x60–0x6F
	'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', 'ä', 'ö', 'ñ', 'ü', 'à', // 0x70–0x7F
}

// gsm0338Extension is the extension table (§6.2.1.1): each is sent as the
// escape plus one septet, two septets in all.
var gsm0338Extension = []rune{'\f', '^', '{', '}', '\\', '[', '~', ']', '|', '€'}

// notGSM are characters often mistaken for GSM ones; each forces UCS-2.
var notGSM = []rune{'ç', '`', '’', '‘', '“', '”', '–', '—', '…', '\u00a0', 'á', 'â', 'ê', 'í', 'ó', 'ú', 'õ', 'ã',
	'ł', 'œ', '°', '•', '\t', '\u00ad', '™', '©', 'Â', 'ÿ'}

func TestSegmentsFollowGSM0338(t *testing.T) {
	if len(gsm0338Basic) != 127 {
		t.Fatalf("the basic table lists %d characters, want 127 (128 codes less the escape)", len(gsm0338Basic))
	}
	seen := map[rune]bool{}
	for _, r := range gsm0338Basic {
		if seen[r] {
			t.Fatalf("%q listed twice", r)
		}
		seen[r] = true
		c := string(r)
		check(t, c, Segments(c), EncodingGSM7, 1, 1)
		check(t, c+"×160", Segments(strings.Repeat(c, 160)), EncodingGSM7, 1, 160)
		check(t, c+"×161", Segments(strings.Repeat(c, 161)), EncodingGSM7, 2, 161)
		check(t, c+"×306", Segments(strings.Repeat(c, 306)), EncodingGSM7, 2, 306)
		check(t, c+"×307", Segments(strings.Repeat(c, 307)), EncodingGSM7, 3, 307)
	}
	for _, r := range gsm0338Extension {
		c := string(r)
		check(t, c, Segments(c), EncodingGSM7, 1, 2)
		check(t, c+"×80", Segments(strings.Repeat(c, 80)), EncodingGSM7, 1, 160)
		check(t, c+"×81", Segments(strings.Repeat(c, 81)), EncodingGSM7, 2, 162)
		// 76 pairs fill 152 septets of a 153-septet part: the 77th pair
		// is never split, so 153 pairs (306 septets) take three parts.
		check(t, c+"×153", Segments(strings.Repeat(c, 153)), EncodingGSM7, 3, 306)
		if got := UCS2Chars("a" + c); len(got) != 0 {
			t.Errorf("UCS2Chars(%q) = %v, want none: an extension character is GSM-7", c, got)
		}
	}
	for _, r := range notGSM {
		c := string(r)
		check(t, c, Segments(c), EncodingUCS2, 1, 1)
		check(t, "plain text and "+c, Segments(strings.Repeat("a", 100)+c), EncodingUCS2, 2, 101)
	}
	// UCS-2: 70 UTF-16 code units in one segment, parts of 67; an emoji
	// outside the BMP is a surrogate pair, two units.
	check(t, "ł×70", Segments(strings.Repeat("ł", 70)), EncodingUCS2, 1, 70)
	check(t, "ł×71", Segments(strings.Repeat("ł", 71)), EncodingUCS2, 2, 71)
	check(t, "ł×134", Segments(strings.Repeat("ł", 134)), EncodingUCS2, 2, 134)
	check(t, "ł×135", Segments(strings.Repeat("ł", 135)), EncodingUCS2, 3, 135)
	check(t, "emoji", Segments("😀"), EncodingUCS2, 1, 2)
	check(t, "emoji×35", Segments(strings.Repeat("😀", 35)), EncodingUCS2, 1, 70)
	check(t, "a + emoji×35", Segments("a"+strings.Repeat("😀", 35)), EncodingUCS2, 2, 71)
	// Mixed: one typographic apostrophe turns a GSM text into UCS-2.
	check(t, "mixed", Segments("Don’t be late: gate {B} at 7 €"), EncodingUCS2, 1, 30)
}

func check(t *testing.T, what string, got Segmentation, enc string, segs, units int) {
	t.Helper()
	if got.Encoding != enc || got.Segments != segs || got.Units != units {
		t.Errorf("Segments(%q) = %+v, want %s, %d segments, %d units", what, got, enc, segs, units)
	}
}

func TestUCS2Chars(t *testing.T) {
	cases := []struct {
		text string
		want []UCS2Char
	}{
		{"", nil},
		{"Plain GSM text with € and {braces}", nil},
		{"Don’t", []UCS2Char{{Char: "’", Index: 3}}},
		// Indexes count characters (code points), not bytes or UTF-16 units.
		{"é😀 “ok”…", []UCS2Char{{Char: "😀", Index: 1}, {Char: "“", Index: 3}, {Char: "”", Index: 6}, {Char: "…", Index: 7}}},
		{"a\u00a0b–c", []UCS2Char{{Char: "\u00a0", Index: 1}, {Char: "–", Index: 3}}},
	}
	for _, tc := range cases {
		got := UCS2Chars(tc.text)
		if len(got) != len(tc.want) {
			t.Errorf("UCS2Chars(%q) = %v, want %v", tc.text, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("UCS2Chars(%q) = %v, want %v", tc.text, got, tc.want)
				break
			}
		}
	}
}
