package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

func TestContactsCrewsAndSendWithResponses(t *testing.T) {
	e := newCLIEnv(t)
	csv := filepath.Join(t.TempDir(), "crew.csv")
	if err := os.WriteFile(csv, []byte("number,name,tags,timezone,site\n"+
		"+15550100001,Ada Lovelace,night,America/Chicago,North\n"+
		"+15550100002,Grace Hopper,night,,\n"+
		"+15550100003,Linus,day,Mars/Base,\n"+
		"nope,Bad,,,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := e.client("send", "contacts", "import", csv, "--dry-run")
	if code != 1 || !strings.Contains(out, "would import: 2 created") || !strings.Contains(out, "line 4:") || !strings.Contains(out, "line 5:") {
		t.Fatalf("dry run: %d %q %q", code, out, errs)
	}
	if code, out, _ := e.client("read", "contacts", "list"); code != 0 || !strings.Contains(out, "0 contacts") {
		t.Fatalf("dry run wrote contacts: %d %q", code, out)
	}
	if code, out, errs := e.client("send", "contacts", "import", csv, "--atomic"); code != 1 || !strings.Contains(errs, "nothing imported") {
		t.Fatalf("atomic: %d %q %q", code, out, errs)
	}
	if code, out, _ := e.client("send", "contacts", "import", csv); code != 1 || !strings.Contains(out, "imported: 2 created") {
		t.Fatalf("import: %d %q", code, out)
	}
	code, out, _ = e.client("read", "contacts", "list", "--tag", "night")
	if code != 0 || !strings.Contains(out, "Ada Lovelace") || !strings.Contains(out, "Grace Hopper") || !strings.Contains(out, "2 contacts") {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, out, errs := e.client("send", "crews", "create", "Night shift", "--members", "+15550100001,+15550100002,+15550100004"); code != 0 ||
		!strings.Contains(out, "(3 members)") {
		t.Fatalf("crews create: %d %q %q", code, out, errs)
	}
	if code, out, _ := e.client("read", "crews"); code != 0 || !strings.Contains(out, "Night shift") {
		t.Fatalf("crews: %d %q", code, out)
	}
	if code, out, _ := e.client("read", "crews", "show", "Night shift"); code != 0 || !strings.Contains(out, "3 contacts") {
		t.Fatalf("crews show: %d %q", code, out)
	}
	code, out, errs = e.client("send", "send", "--from", "+15550100000", "--crew", "Night shift", "--text", "Hi {{first_name}}, 7am?",
		"--responses", "1=Coming,2=Cannot", "--quorum", "1:2", "--no-follow")
	if code != 0 {
		t.Fatalf("send: %d %q %q", code, out, errs)
	}
	id := strings.TrimSpace(out)
	// Ada answers YES (the first option), Grace 2.
	g := e.fake.groups[id]
	for i, text := range map[int]string{0: "yes", 1: "2"} {
		rep, ok := g.Reply(crewcast.Event{EventID: "r" + text, Kind: crewcast.KindInbound, From: g.Recipients[i].Number, Text: text}, time.Now())
		if !ok {
			t.Fatal("reply not matched")
		}
		if err := e.fake.apply(id, rep); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs = e.client("read", "status", id)
	if code != 0 {
		t.Fatalf("status: %d %q", code, errs)
	}
	for _, want := range []string{"answers 1 Coming 1 · 2 Cannot 1 · no reply 1 · quorum 1/2", "ANSWER", "1 Coming", "2 Cannot"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := e.client("send", "send", "--from", "+15550100000", "--crew", "Nobody", "--text", "x", "--no-follow"); code != 1 ||
		!strings.Contains(errs, "Nobody") {
		t.Fatalf("unknown crew: %d %q", code, errs)
	}
	if code, _, _ := e.client("send", "send", "--from", "+15550100000", "--crew", "Night shift", "--text", "x", "--responses", "1"); code != 2 {
		t.Fatalf("bad --responses: exit %d", code)
	}
}
