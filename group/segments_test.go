package group

import (
	"strings"
	"testing"
)

func TestSegments(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		enc   string
		segs  int
		units int
	}{
		{"empty", "", EncodingGSM7, 0, 0},
		{"one gsm", strings.Repeat("a", 160), EncodingGSM7, 1, 160},
		{"two gsm", strings.Repeat("a", 161), EncodingGSM7, 2, 161},
		{"gsm parts of 153", strings.Repeat("a", 306), EncodingGSM7, 2, 306},
		{"gsm 307", strings.Repeat("a", 307), EncodingGSM7, 3, 307},
		{"extension counts two", strings.Repeat("€", 80), EncodingGSM7, 1, 160},
		{"extension over", strings.Repeat("€", 81), EncodingGSM7, 2, 162},
		// 152 septets then an escape pair: the pair moves to the next part.
		{"escape never split", strings.Repeat("a", 152) + "{" + strings.Repeat("a", 10), EncodingGSM7, 2, 164},
		{"accented gsm", "Café à 7h, ok? ÄÖÜ", EncodingGSM7, 1, 18},
		{"lowercase ç is not gsm", "ça", EncodingUCS2, 1, 2},
		{"one ucs2", strings.Repeat("é", 69) + "ł", EncodingUCS2, 1, 70},
		{"two ucs2", strings.Repeat("ł", 71), EncodingUCS2, 2, 71},
		{"emoji are two units", strings.Repeat("👍", 35), EncodingUCS2, 1, 70},
		{"emoji 36", strings.Repeat("👍", 36), EncodingUCS2, 2, 72},
		// 33 emoji = 66 units; the 34th would split across parts of 67.
		{"surrogate pair never split", strings.Repeat("👍", 67), EncodingUCS2, 3, 134},
		{"1600 emoji", strings.Repeat("😀", 1600), EncodingUCS2, 49, 3200},
		{"1530 gsm is ten", strings.Repeat("x", 1530), EncodingGSM7, 10, 1530},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Segments(tc.text)
			if got.Encoding != tc.enc || got.Segments != tc.segs || got.Units != tc.units {
				t.Fatalf("Segments = %+v, want %s %d segments %d units", got, tc.enc, tc.segs, tc.units)
			}
		})
	}
}
