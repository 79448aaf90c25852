package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/crewcast/crewcast/apitype"
)

var csvHeader = map[string]string{"Content-Type": "text/csv"}

func TestContactsCRUDAndSearch(t *testing.T) {
	e := newEnv(t, nil)
	resp, b := e.do("POST", "/v1/contacts", `{"number":"(555) 010-0001","name":" Ada Lovelace ","tags":["night","night","ops"],
		"timezone":"America/Chicago","fields":{"site":"North","empty":" "}}`, "send", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, b)
	}
	ada := decode[contactJSON](t, b)
	if ada.Number != "+15550100001" || ada.Name != "Ada Lovelace" || !slices.Equal(ada.Tags, []string{"night", "ops"}) ||
		ada.Fields["site"] != "North" || len(ada.Fields) != 1 || !strings.HasPrefix(ada.ID, "ct_") {
		t.Fatalf("created = %+v", ada)
	}
	if resp, b := e.do("POST", "/v1/contacts", `{"number":"+15550100001"}`, "send", nil); resp.StatusCode != http.StatusConflict {
		t.Fatalf("duplicate number = %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do("POST", "/v1/contacts", `{"number":"+15550100002"}`, "read", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("read key may not create: %d", resp.StatusCode)
	}
	for _, body := range []string{
		`{"number":"+15550100002","timezone":"Mars/Olympus"}`,
		`{"number":"+15550100002","timezone":"Local"}`,
		`{"number":"nope"}`,
		`{"name":"no number"}`,
		`{"number":"+15550100002","fields":{"bad key":"x"}}`,
		`{"number":"+15550100002","tags":["a;b"]}`,
	} {
		if resp, b := e.do("POST", "/v1/contacts", body, "send", nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s = %d %s, want 400", body, resp.StatusCode, b)
		}
	}
	e.do("POST", "/v1/contacts", `{"number":"+15550100002","name":"Grace Hopper","tags":["day"]}`, "send", nil)
	list := func(q string) []string {
		t.Helper()
		resp, b := e.do("GET", "/v1/contacts"+q, "", "read", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("list%s = %d %s", q, resp.StatusCode, b)
		}
		var names []string
		for _, c := range decode[contactListJSON](t, b).Contacts {
			names = append(names, c.Name)
		}
		return names
	}
	if got := list("?q=hop"); !slices.Equal(got, []string{"Grace Hopper"}) {
		t.Fatalf("q=hop: %v", got)
	}
	if got := list("?q=0100001"); !slices.Equal(got, []string{"Ada Lovelace"}) {
		t.Fatalf("q by number: %v", got)
	}
	if got := list("?tag=day"); !slices.Equal(got, []string{"Grace Hopper"}) {
		t.Fatalf("tag=day: %v", got)
	}
	resp, b = e.do("PATCH", "/v1/contacts/"+ada.ID, `{"name":"Ada King","timezone":"Europe/London"}`, "send", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("patch = %d %s", resp.StatusCode, b)
	}
	if c := decode[contactJSON](t, b); c.Name != "Ada King" || c.Timezone != "Europe/London" || c.Fields["site"] != "North" {
		t.Fatalf("patched = %+v", c)
	}
	if resp, _ := e.do("DELETE", "/v1/contacts/"+ada.ID, "", "send", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete = %d", resp.StatusCode)
	}
	if resp, _ := e.do("GET", "/v1/contacts/"+ada.ID, "", "read", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("get deleted = %d", resp.StatusCode)
	}
}

func TestContactsImport(t *testing.T) {
	e := newEnv(t, nil)
	long := strings.Repeat("x", 10<<20) // a 10 MB line
	csv := "\ufeffNumber,name,tags,timezone,site\r\n" +
		"+15550100001,Ada,night;ops,America/Chicago,North\r\n" +
		"555-010-0002,\"Hopper, Grace\",day,,\r\n" +
		"not-a-number,Bad,,,\r\n" +
		"+15550100003,Zed,,Mars/Base,\r\n" +
		"+15550100004,\"He said \"\"hi\"\"\",,,\r\n" +
		"+15550100005,Long," + long + ",,\r\n" +
		"+15550100001,Again,,,\r\n" +
		"+15550100006,Bare \"quote,,,\r\n" +
		"+15550100007,Too,many,,,,columns\r\n" +
		"\r\n" +
		"+15550100008,Last,,,\r\n"
	resp, b := e.do("POST", "/v1/contacts/import?dry_run=1", csv, "send", csvHeader)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dry run = %d %s", resp.StatusCode, b[:min(len(b), 500)])
	}
	rep := decode[importJSON](t, b)
	if rep.Created != 4 || rep.Updated != 0 {
		t.Fatalf("dry run counts = %+v", rep)
	}
	lines := map[int]string{}
	for _, er := range rep.Errors {
		lines[er.Line] = er.Error
	}
	for line, want := range map[int]string{4: "not a phone number", 5: "IANA", 7: "longer than", 8: "already on line 2", 9: "quote", 10: "columns"} {
		if !strings.Contains(lines[line], want) {
			t.Errorf("line %d error = %q, want it to mention %q (all: %v)", line, lines[line], want, rep.Errors)
		}
	}
	if len(rep.Errors) != 6 {
		t.Errorf("errors = %v, want 6", rep.Errors)
	}
	if got := decode[contactListJSON](t, must(e.do("GET", "/v1/contacts", "", "read", nil))).Contacts; len(got) != 0 {
		t.Fatalf("dry run wrote %d contacts", len(got))
	}
	// atomic: one bad line imports nothing.
	resp, b = e.do("POST", "/v1/contacts/import?atomic=1", csv, "send", csvHeader)
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("atomic = %d %s", resp.StatusCode, b[:min(len(b), 300)])
	}
	if got := decode[contactListJSON](t, must(e.do("GET", "/v1/contacts", "", "read", nil))).Contacts; len(got) != 0 {
		t.Fatalf("atomic import wrote %d contacts", len(got))
	}
	resp, b = e.do("POST", "/v1/contacts/import", csv, "send", csvHeader)
	if rep := decode[importJSON](t, b); resp.StatusCode != http.StatusOK || rep.Created != 4 {
		t.Fatalf("import = %d %+v", resp.StatusCode, rep)
	}
	list := decode[contactListJSON](t, must(e.do("GET", "/v1/contacts?tag=night", "", "read", nil))).Contacts
	if len(list) != 1 || list[0].Name != "Ada" || list[0].Timezone != "America/Chicago" || list[0].Fields["site"] != "North" {
		t.Fatalf("imported Ada = %+v", list)
	}
	q := decode[contactListJSON](t, must(e.do("GET", "/v1/contacts?q=hopper", "", "read", nil))).Contacts
	if len(q) != 1 || q[0].Name != "Hopper, Grace" || q[0].Number != "+15550100002" {
		t.Fatalf("quoted name = %+v", q)
	}
	if q := decode[contactListJSON](t, must(e.do("GET", "/v1/contacts?q=said", "", "read", nil))).Contacts; len(q) != 1 || q[0].Name != `He said "hi"` {
		t.Fatalf("doubled quotes = %+v", q)
	}
	// Upsert: a file of number,name changes names only; a field column with
	// an empty value removes that field.
	resp, b = e.do("POST", "/v1/contacts/import", "number,name\n+15550100001,Ada L\n+15550100002,Hopper, Grace\n", "send", csvHeader)
	if rep := decode[importJSON](t, b); rep.Updated != 1 || rep.Created != 0 || len(rep.Errors) != 1 {
		t.Fatalf("upsert = %d %+v", resp.StatusCode, rep)
	}
	list = decode[contactListJSON](t, must(e.do("GET", "/v1/contacts?tag=night", "", "read", nil))).Contacts
	if len(list) != 1 || list[0].Name != "Ada L" || list[0].Fields["site"] != "North" || list[0].Timezone != "America/Chicago" {
		t.Fatalf("after name-only upsert = %+v", list)
	}
	e.do("POST", "/v1/contacts/import", "number,site\n+15550100001,\n", "send", csvHeader)
	list = decode[contactListJSON](t, must(e.do("GET", "/v1/contacts?tag=night", "", "read", nil))).Contacts
	if _, ok := list[0].Fields["site"]; ok {
		t.Fatalf("empty field column kept the field: %+v", list[0])
	}
	for _, bad := range []string{"", "name,tags\nAda,x\n", "number,number\n", "number,bad key\n", "\"number\n"} {
		if resp, b := e.do("POST", "/v1/contacts/import", bad, "send", csvHeader); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("header %q = %d %s, want 400", bad, resp.StatusCode, b)
		}
	}
}

// TestContactsImportManyRows imports and re-imports several thousand rows
// (created, then unchanged). The size that matters for speed (50,000 rows)
// is the bench's contacts_import scenario; here the rows only need to span
// many of the import's statements.
func TestContactsImportManyRows(t *testing.T) {
	const n = 5000
	e := newEnv(t, nil)
	var sb strings.Builder
	sb.WriteString("number,name,tags,timezone,site\n")
	for i := range n {
		fmt.Fprintf(&sb, "+1555%07d,Person %d,crew%d;all,America/New_York,Site %d\n", 2000000+i, i, i%10, i%7)
	}
	resp, b := e.do("POST", "/v1/contacts/import", sb.String(), "send", csvHeader)
	rep := decode[importJSON](t, b)
	if resp.StatusCode != http.StatusOK || rep.Created != n || len(rep.Errors) != 0 {
		t.Fatalf("import = %d %+v", resp.StatusCode, rep)
	}
	resp, b = e.do("POST", "/v1/contacts/import", sb.String(), "send", csvHeader)
	if rep := decode[importJSON](t, b); rep.Unchanged != n {
		t.Fatalf("re-import = %d %+v", resp.StatusCode, rep)
	}
}

func TestCrewsAndTemplatesAPI(t *testing.T) {
	e := newEnv(t, nil)
	ada := decode[contactJSON](t, must(e.do("POST", "/v1/contacts", `{"number":"+15550100001","name":"Ada"}`, "send", nil)))
	resp, b := e.do("POST", "/v1/crews", `{"name":"Night shift","description":"22-06","members":["`+ada.ID+`","+15550100002","+15550100001"]}`, "send", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create crew = %d %s", resp.StatusCode, b)
	}
	k := decode[crewJSON](t, b)
	if k.Size != 2 || k.Members[0] != ada.ID {
		t.Fatalf("crew = %+v", k)
	}
	// The new number became a contact.
	if got := decode[contactListJSON](t, must(e.do("GET", "/v1/contacts?crew=Night%20shift", "", "read", nil))).Contacts; len(got) != 2 {
		t.Fatalf("crew filter by name = %+v", got)
	}
	if resp, b := e.do("POST", "/v1/crews", `{"name":"Ghosts","members":["ct_nobody"]}`, "send", nil); resp.StatusCode != http.StatusUnprocessableEntity ||
		!strings.Contains(string(b), "ct_nobody") {
		t.Fatalf("unknown member = %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do("POST", "/v1/crews", `{"name":"Night shift"}`, "send", nil); resp.StatusCode != http.StatusConflict {
		t.Fatalf("duplicate crew = %d", resp.StatusCode)
	}
	if resp, b := e.do("GET", "/v1/contacts?crew=Nobody", "", "read", nil); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("unknown crew filter = %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("PATCH", "/v1/crews/"+k.ID, `{"members":["+15550100003"]}`, "send", nil)
	if k2 := decode[crewJSON](t, b); resp.StatusCode != http.StatusOK || k2.Size != 1 || k2.Name != "Night shift" {
		t.Fatalf("patch crew = %d %s", resp.StatusCode, b)
	}
	if crews := decode[struct{ Crews []crewJSON }](t, must(e.do("GET", "/v1/crews", "", "read", nil))).Crews; len(crews) != 1 {
		t.Fatalf("list crews = %+v", crews)
	}
	if resp, _ := e.do("DELETE", "/v1/crews/"+k.ID, "", "send", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete crew = %d", resp.StatusCode)
	}

	resp, b = e.do("POST", "/v1/templates", `{"name":"Call-in","text":"Hi {{first_name}}, {{fields.site | default \"HQ\"}} at 7?",
		"responses":[{"key":"1","label":"Coming","ack":"yes"},{"key":"2","label":"Can't make it","ack":"no"}]}`, "send", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create template = %d %s", resp.StatusCode, b)
	}
	tp := decode[templateJSON](t, b)
	if len(tp.Responses) != 2 || tp.Responses[1].Label != "Can't make it" {
		t.Fatalf("template = %+v", tp)
	}
	resp, b = e.do("POST", "/v1/templates", `{"name":"Bad","text":"Hi {{nickname}}"}`, "send", nil)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(b), "nickname") {
		t.Fatalf("unknown variable = %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("POST", "/v1/templates", `{"name":"Bad","text":"x","responses":[{"key":"STOP","label":"Stop"}]}`, "send", nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("STOP as an option = %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("PATCH", "/v1/templates/"+tp.ID, `{"text":"Hello {{name}}"}`, "send", nil)
	if tp2 := decode[templateJSON](t, b); resp.StatusCode != http.StatusOK || tp2.Text != "Hello {{name}}" || len(tp2.Responses) != 2 {
		t.Fatalf("patch template = %d %s", resp.StatusCode, b)
	}
	if ts := decode[struct{ Templates []templateJSON }](t, must(e.do("GET", "/v1/templates", "", "read", nil))).Templates; len(ts) != 1 {
		t.Fatalf("list templates = %+v", ts)
	}
	if resp, _ := e.do("DELETE", "/v1/templates/"+tp.ID, "", "send", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete template = %d", resp.StatusCode)
	}
}

// TestCrewMemberOrder: a crew keeps its members in the order given, since
// that order is a callout's priority list (docs/design.md §11, §15): the
// API answers them in that order on create, GET and list; a PATCH with
// the same members in another order reorders them; a group sent to the
// crew has its roster in that order.
func TestCrewMemberOrder(t *testing.T) {
	e := newEnv(t, nil)
	var ids []string
	for _, n := range []string{"+15550100001", "+15550100002", "+15550100003"} {
		ids = append(ids, decode[contactJSON](t, must(e.do("POST", "/v1/contacts", `{"number":"`+n+`"}`, "send", nil))).ID)
	}
	resp, b := e.do("POST", "/v1/crews", `{"name":"Gate","members":["`+ids[2]+`","+15550100004","`+ids[0]+`","`+ids[1]+`"]}`, "send", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create crew = %d %s", resp.StatusCode, b)
	}
	k := decode[crewJSON](t, b)
	newID := k.Members[1]
	if want := []string{ids[2], newID, ids[0], ids[1]}; strings.Join(k.Members, ",") != strings.Join(want, ",") || !strings.HasPrefix(newID, "ct_") {
		t.Fatalf("created members %v, want %v", k.Members, want)
	}
	reordered := []string{ids[0], ids[1], newID, ids[2]}
	resp, b = e.do("PATCH", "/v1/crews/"+k.ID, `{"members":["`+strings.Join(reordered, `","`)+`"]}`, "send", nil)
	if got := decode[crewJSON](t, b).Members; resp.StatusCode != http.StatusOK || strings.Join(got, ",") != strings.Join(reordered, ",") {
		t.Fatalf("patch = %d, members %v, want %v", resp.StatusCode, got, reordered)
	}
	if got := decode[crewJSON](t, must(e.do("GET", "/v1/crews/"+k.ID, "", "read", nil))).Members; strings.Join(got, ",") != strings.Join(reordered, ",") {
		t.Fatalf("GET members %v, want %v", got, reordered)
	}
	if crews := decode[struct{ Crews []crewJSON }](t, must(e.do("GET", "/v1/crews", "", "read", nil))).Crews; len(crews) != 1 ||
		strings.Join(crews[0].Members, ",") != strings.Join(reordered, ",") {
		t.Fatalf("list = %+v", crews)
	}
	resp, b = e.do("POST", "/v1/groups", `{"from":"+15550100000","crews":["Gate"],"text":"x"}`, "send", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create group = %d %s", resp.StatusCode, b)
	}
	var order []string
	for _, r := range decode[apitype.Group](t, b).Recipients {
		order = append(order, r.Number)
	}
	if want := "+15550100001,+15550100002,+15550100004,+15550100003"; strings.Join(order, ",") != want {
		t.Fatalf("roster %v, want %s", order, want)
	}
}
