package group

import (
	"strconv"

	"bufio"
	"github.com/crewcast/crewcast"
	"os"
	"strings"
	"sync"
	"testing"
)

// ReplyCase is one real-world reply and how it must be classified.
type replyCase struct {
	Text, Want string // Want: stop, start, help, possible or -
}

func loadReplyCases(t *testing.T) []replyCase {
	t.Helper()
	f, err := os.Open("testdata/replies.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []replyCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, want, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("testdata/replies.tsv: no tab in %q", line)
		}
		out = append(out, replyCase{text, want})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestClassifyReply(t *testing.T) {
	cases := loadReplyCases(t)
	if len(cases) < 60 {
		t.Fatalf("only %d cases, want at least 60", len(cases))
	}
	for _, c := range cases {
		got := ClassifyReply(c.Text)
		want := Classification{}
		switch c.Want {
		case "stop":
			want.Keyword = KeywordStop
		case "start":
			want.Keyword = KeywordStart
		case "help":
			want.Keyword = KeywordHelp
		case "possible":
			want.PossibleOptOut = true
		case "-":
		default:
			t.Fatalf("case %q: unknown want %q", c.Text, c.Want)
		}
		if got != want {
			t.Errorf("ClassifyReply(%q) = %+v, want %+v", c.Text, got, want)
		}
	}
}

// TestReplyAnswersAreNeverOptOuts: with response options, a reply that is
// an option's key or label is an answer, neither an opt-out nor a possible
// one; a stop word among other words is flagged; STOP still opts out.
func TestReplyAnswersAreNeverOptOuts(t *testing.T) {
	opts := []Option{{Key: "1", Label: "Coming", Ack: crewcast.AckYes}, {Key: "2", Label: "Can't stop by", Ack: crewcast.AckNo}}
	c, errs := Plan("g", Request{From: sender, To: numbers(1), Text: "Who can come?", Responses: opts}, Settings{}, nil, t0)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	g := &Group{}
	if err := g.Apply(c); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		text, kw, resp string
		possible       bool
	}{
		{"1", "", "1", false}, {"YES", "", "1", false}, {"Can't stop by", "", "2", false}, {"can't stop by!", "", "2", false},
		{"Can't", "", "", false}, {"I can't stop by today", "", "", true}, {"STOP", KeywordStop, "", false},
		{"no more texts", KeywordStop, "", false}, {"BAJA", KeywordStop, "", false},
	} {
		r, ok := g.Reply(crewcast.Event{EventID: "e" + strconv.Itoa(i), Kind: crewcast.KindInbound, From: numbers(1)[0], Text: tc.text}, t0)
		if !ok {
			t.Fatalf("%q: reply not matched", tc.text)
		}
		if r.Keyword != tc.kw || r.Response != tc.resp || r.PossibleOptOut != tc.possible {
			t.Errorf("%q: keyword %q response %q possible %v, want %q %q %v", tc.text, r.Keyword, r.Response, r.PossibleOptOut, tc.kw, tc.resp, tc.possible)
		}
	}
}

// TestClassifyReplyConcurrently: group actors and the unmatched journal
// classify at the same time; the classifier keeps no shared state (run
// with -race).
func TestClassifyReplyConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if got := ClassifyReply("¡Cancelár, por favor!"); got.Keyword != KeywordStop {
					t.Errorf("got %+v", got)
					return
				}
			}
		})
	}
	wg.Wait()
}
