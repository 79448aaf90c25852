package sqlq

import (
	"encoding/json"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// decodeFields is json.Unmarshal into a map[string]string: the same map
// for what decodes, an error for what does not, on what json.Marshal
// writes (keys and values with quotes, backslashes, HTML characters,
// control characters, invalid UTF-8) and on arbitrary text near that
// shape.
func TestDecodeFieldsIsUnmarshal(t *testing.T) {
	piece := rapid.SampledFrom([]string{"", "a", "Site 3", `"`, `\`, "<&>", "\n", "\x01", "ü😀", "\xff", " ", ":", ",", "{", "}"})
	str := func(rt *rapid.T, label string) string {
		return piece.Draw(rt, label+"1") + piece.Draw(rt, label+"2")
	}
	rapid.Check(t, func(rt *rapid.T) {
		var s string
		if rapid.Bool().Draw(rt, "marshal") {
			m := map[string]string{}
			for i := range rapid.IntRange(0, 4).Draw(rt, "n") {
				m[str(rt, "k")+string(rune('a'+i))] = str(rt, "v")
			}
			b, err := json.Marshal(m)
			if err != nil {
				rt.Fatal(err)
			}
			s = string(b)
		} else {
			sep := rapid.SampledFrom([]string{":", ":", ":", " :", ""}).Draw(rt, "sep")
			end := rapid.SampledFrom([]string{"}", "}", "}", ",}", ` ,"b":"c"}`, ""}).Draw(rt, "end")
			s = "{" + `"` + str(rt, "k") + `"` + sep + `"` + str(rt, "v") + `"` + end
		}
		got, err := decodeFields(s)
		var want map[string]string
		werr := json.Unmarshal([]byte(s), &want)
		if (err == nil) != (werr == nil) {
			rt.Fatalf("%q: error %v, json.Unmarshal %v", s, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			rt.Fatalf("%q: got %q, json.Unmarshal %q", s, got, want)
		}
	})
}

func TestDecodeFieldsShapes(t *testing.T) {
	for s, want := range map[string]map[string]string{
		`{}`:                           {},
		`{"site":"Site 3"}`:            {"site": "Site 3"},
		`{"a":"1","b":"2"}`:            {"a": "1", "b": "2"},
		`{"a":"1","a":"2"}`:            {"a": "2"},
		`{"a":"\u003c"}`:               {"a": "<"},
		`{ "a" : "1" }`:                {"a": "1"},
		`{"crew":"Zoë","site":"Dock"}`: {"crew": "Zoë", "site": "Dock"},
		"{\"a\":\"\xff\"}":             {"a": "\ufffd"},
	} {
		got, err := decodeFields(s)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q, %v; want %q", s, got, err, want)
		}
	}
	for _, s := range []string{``, `{`, `{"a":1}`, `{"a":"1",}`, `{"a""1"}`, `["a"]`, `{"a":"1"}x`, "{\"a\":\"\x01\"}"} {
		if got, err := decodeFields(s); err == nil {
			t.Errorf("%q decoded to %q", s, got)
		}
	}
}
