// Package deploy_test checks the deployment files in deploy/: the container
// image definition, the systemd unit, the Prometheus alert rules and the
// Grafana dashboard, against the running code where it can (every metric
// they use must exist in /metrics with the type the expression assumes)
// and with the distribution's tools where the machine has them
// (systemd-analyze verify, promtool check rules / test rules). No container
// engine runs on the CI machine, so the image definition is linted by
// TestDockerfile rather than built.
package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
)

// requireTools makes a missing external tool a failure instead of a skip;
// .ci/run sets it, because CI installs the tools.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CREWCAST_REQUIRE_TOOLS") != "" {
			t.Fatalf("%s is not installed and CREWCAST_REQUIRE_TOOLS is set", name)
		}
		t.Skipf("%s is not installed (Debian: apt-get install %s); this check did not run", name, map[string]string{"promtool": "prometheus", "systemd-analyze": "systemd"}[name])
	}
	return p
}

// instruction is one Dockerfile instruction with continuation lines joined.
type instruction struct {
	cmd, args string
}

func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// TestDockerfile lints deploy/Dockerfile for the properties the image must
// have: a multi-stage build of a static (CGO_ENABLED=0) binary, a final
// stage without a shell or package manager running as a non-root user, a
// HEALTHCHECK on /readyz through a command the binary has, the database on
// a volume, and no secret baked in.
func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t, "Dockerfile")
	var stages []int // index of each FROM
	for i, in := range ins {
		if in.cmd == "FROM" {
			stages = append(stages, i)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, found %d FROM", len(stages))
	}
	if !strings.Contains(ins[stages[0]].args, " AS build") {
		t.Errorf("first stage %q should be named (AS build)", ins[stages[0]].args)
	}
	// The build image carries the Go release go.mod asks for.
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVer == nil || !strings.HasPrefix(ins[stages[0]].args, "golang:"+string(goVer[1])) {
		t.Errorf("build stage %q does not use the Go release of go.mod (%s)", ins[stages[0]].args, goVer)
	}
	final := ins[stages[len(stages)-1]:]
	base := final[0].args
	if !strings.HasPrefix(base, "gcr.io/distroless/static") && base != "scratch" {
		t.Errorf("final base %q: want distroless/static or scratch (a static binary needs nothing else)", base)
	}
	var built, user, health, volume, entry, copied bool
	for _, in := range ins[:stages[len(stages)-1]] {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			if !strings.Contains(in.args, "CGO_ENABLED=0") {
				t.Errorf("the go build must set CGO_ENABLED=0 (static binary): %s", in.args)
			}
			built = strings.Contains(in.args, "./cmd/crewcast")
		}
	}
	env := map[string]string{}
	for _, in := range final {
		switch in.cmd {
		case "USER":
			u, _, _ := strings.Cut(in.args, ":")
			user = u != "" && u != "root" && u != "0"
		case "HEALTHCHECK":
			health = strings.Contains(in.args, "/readyz") && strings.Contains(in.args, `"healthcheck"`)
		case "VOLUME":
			volume = strings.Contains(in.args, "/data")
		case "ENTRYPOINT":
			entry = strings.Contains(in.args, "/usr/local/bin/crewcast")
		case "COPY":
			copied = copied || strings.Contains(in.args, "--from=build")
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		case "RUN":
			t.Errorf("final stage runs %q: a distroless image has no shell", in.args)
		}
	}
	for what, ok := range map[string]bool{"a go build of ./cmd/crewcast": built, "a non-root USER": user,
		"HEALTHCHECK via crewcast healthcheck on /readyz": health, "VOLUME /data": volume,
		"ENTRYPOINT crewcast": entry, "COPY --from=build": copied} {
		if !ok {
			t.Errorf("Dockerfile lacks %s", what)
		}
	}
	if !strings.HasPrefix(env["CREWCAST_DB"], "/data/") {
		t.Errorf("CREWCAST_DB=%q: the database must live on the volume (read-only root file system)", env["CREWCAST_DB"])
	}
	if env["CREWCAST_ADDR"] == "" || strings.HasPrefix(env["CREWCAST_ADDR"], "127.") {
		t.Errorf("CREWCAST_ADDR=%q: must listen beyond the container's loopback", env["CREWCAST_ADDR"])
	}
	secret := regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|SID)\b`)
	for _, in := range ins {
		if (in.cmd == "ENV" || in.cmd == "ARG") && secret.MatchString(in.args) {
			t.Errorf("%s %s: secrets belong in the runtime environment, not the image", in.cmd, in.args)
		}
	}
	if b, err := os.ReadFile("../.dockerignore"); err != nil || !strings.Contains(string(b), "*.db") {
		t.Errorf(".dockerignore must keep databases out of the build context: %v", err)
	}
	// The healthcheck command the image relies on exists (TestOperationsDoc
	// runs it against a live server).
	src, err := os.ReadFile("../cmd/crewcast/doctor.go")
	if err != nil || !strings.Contains(string(src), `register(command{name: "healthcheck"`) {
		t.Errorf("cmd/crewcast has no healthcheck command: %v", err)
	}
}

// unit parses a systemd unit into section → key → values.
func unit(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			out[section] = map[string][]string{}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			t.Fatalf("%s: bad line %q", path, line)
		}
		out[section][k] = append(out[section][k], v)
	}
	return out
}

// TestSystemdUnit checks the unit's sandboxing and settings, then runs
// systemd-analyze verify on it (with ExecStart pointing at a real file) and
// requires it to say nothing (verify exits 0 even for unknown directives),
// then requires systemd-analyze security to rate its exposure at most 2.0.
func TestSystemdUnit(t *testing.T) {
	u := unit(t, "crewcast.service")
	svc := u["Service"]
	want := map[string]string{
		"DynamicUser": "yes", "ProtectSystem": "strict", "StateDirectory": "crewcast", "ProtectHome": "yes",
		"PrivateTmp": "yes", "NoNewPrivileges": "yes", "CapabilityBoundingSet": "", "Restart": "on-failure",
		"KillSignal": "SIGTERM", "Type": "exec", "RestrictSUIDSGID": "yes", "MemoryDenyWriteExecute": "yes",
	}
	for k, v := range want {
		if got, ok := svc[k]; !ok || got[len(got)-1] != v {
			t.Errorf("[Service] %s = %v, want %q", k, got, v)
		}
	}
	if !slices.ContainsFunc(svc["Environment"], func(s string) bool { return strings.Contains(s, "CREWCAST_DB=/var/lib/crewcast/") }) {
		t.Errorf("CREWCAST_DB must point into the StateDirectory: %v", svc["Environment"])
	}
	if got := svc["ExecStart"]; len(got) != 1 || !strings.HasSuffix(got[0], "crewcast serve") {
		t.Errorf("ExecStart = %v", got)
	}
	if d, err := time.ParseDuration(strings.TrimSpace(svc["TimeoutStopSec"][0])); err != nil || d <= 30*time.Second {
		t.Errorf("TimeoutStopSec = %v: must exceed serve's 30 s drain", svc["TimeoutStopSec"])
	}
	if u["Install"]["WantedBy"][0] != "multi-user.target" {
		t.Errorf("WantedBy = %v", u["Install"]["WantedBy"])
	}

	analyze := requireTool(t, "systemd-analyze")
	dir := t.TempDir()
	exe := filepath.Join(dir, "crewcast")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile("crewcast.service")
	text := strings.ReplaceAll(string(b), "/usr/local/bin/crewcast", exe)
	path := filepath.Join(dir, "crewcast.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, analyze, "verify", path)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// systemd's own sandboxing score: 0 (locked down) to 10 (exposed);
	// the unit scores 1.2, and must stay at or under 2.0.
	cmd = exec.CommandContext(ctx, analyze, "security", "--offline=yes", "--threshold=20", path)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_COLOR=0", "SYSTEMD_COLORS=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("systemd-analyze security: exposure above 2.0 (%v)\n%s", err, out)
	}
}

// used is one metric a rule or panel uses and the type its use implies.
type used struct {
	family, kind, where string
}

var (
	metricRef = regexp.MustCompile(`\b((?:crewcast|process|go)_[a-z0-9_]+)\b`)
	counterFn = regexp.MustCompile(`(?:rate|irate|increase)\(\s*$`)
)

// metricsIn finds the metrics an expression uses: a _bucket/_sum/_count
// series is a histogram's, a series under rate/increase a counter, any
// other a gauge.
func metricsIn(expr, where string) []used {
	var out []used
	for _, m := range metricRef.FindAllStringSubmatchIndex(expr, -1) {
		name := expr[m[2]:m[3]]
		switch {
		case strings.HasSuffix(name, "_bucket"), strings.HasSuffix(name, "_sum"), strings.HasSuffix(name, "_count"):
			fam := name[:strings.LastIndex(name, "_")]
			out = append(out, used{fam, "HISTOGRAM", where})
		case counterFn.MatchString(expr[:m[2]]):
			out = append(out, used{name, "COUNTER", where})
		default:
			out = append(out, used{name, "GAUGE", where})
		}
	}
	return out
}

// ruleExprs returns every alert expression of the rules file (each on one
// line, which promtool and this test both rely on).
func ruleExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("prometheus/crewcast-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	alert := ""
	for _, line := range strings.Split(string(b), "\n") {
		s := strings.TrimSpace(line)
		if a, ok := strings.CutPrefix(s, "- alert: "); ok {
			alert = a
		}
		if e, ok := strings.CutPrefix(s, "expr: "); ok {
			if e == "|" || e == ">" || e == "" {
				t.Fatalf("alert %s: keep expr on one line", alert)
			}
			out[alert] = e
		}
	}
	return out
}

func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("grafana/crewcast-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for i, tg := range p.Targets {
			out[fmt.Sprintf("panel %q #%d", p.Title, i)] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			out["variable "+v.Name] = v.Definition
		}
	}
	return out
}

// scrape runs a demo server, drives a small group to delivery, a reply and
// a forged webhook, and returns its /metrics families.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	faults := sim.Faults{DelayMS: [2]int{5, 20}, ReplyRate: 1, ReplyTexts: []string{"YES"}}
	seed := int64(3)
	key := "deploy-admin-5a2eba3abe5b22a83f3a45ee870a84f4465189123d963487"
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", DB: filepath.Join(t.TempDir(), "m.db"), Provider: server.ProviderDemo,
		DemoFaults: &faults, DemoSeed: &seed, AdminKey: key, SendRate: 0, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	body := `{"from":"+15550100000","to":["+15550100001","+15550100002","+15550100003"],"text":"Crew call 7am"}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v1/groups", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create group: %s", resp.Status)
	}
	// A forged webhook: one signature failure.
	forged, _ := http.NewRequest(http.MethodPost, srv.URL()+"/webhooks/telnyx", strings.NewReader(`{"data":{}}`))
	forged.Header.Set(telnyx.SignatureHeader, "AAAA")
	forged.Header.Set(telnyx.TimestampHeader, fmt.Sprint(time.Now().Unix()))
	if resp, err := http.DefaultClient.Do(forged); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		rows, _, err := srv.Store().ListDeliveries(context.Background(), store.DeliveryQuery{})
		if err != nil {
			t.Fatal(err)
		}
		done := len(rows) == 3
		for _, r := range rows {
			done = done && r.Status == "delivered" && !r.RepliedAt.IsZero()
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group not delivered and replied in 30 s: %+v", rows)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err = http.Get(srv.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("/metrics answered without X-Request-Id")
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// TestDashboardAndRulesUseRealMetrics: every metric the alert rules and
// the dashboard query exists in a live server's /metrics with the type the
// query assumes (rate over a counter, quantiles over a histogram, a gauge
// read as is).
func TestDashboardAndRulesUseRealMetrics(t *testing.T) {
	exprs := ruleExprs(t)
	if len(exprs) < 8 {
		t.Fatalf("found %d alert rules", len(exprs))
	}
	for k, v := range dashboardExprs(t) {
		exprs[k] = v
	}
	fams := scrape(t)
	var uses []used
	for where, e := range exprs {
		u := metricsIn(e, where)
		if len(u) == 0 && !strings.Contains(e, "up{") {
			t.Errorf("%s: no metric found in %q", where, e)
		}
		uses = append(uses, u...)
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].where < uses[j].where })
	checked := map[string]bool{}
	for _, u := range uses {
		f, ok := fams[u.family]
		if !ok {
			t.Errorf("%s uses %s, which /metrics does not have", u.where, u.family)
			continue
		}
		if got := f.GetType().String(); got != u.kind {
			t.Errorf("%s uses %s as a %s; /metrics has a %s", u.where, u.family, u.kind, got)
		}
		checked[u.family] = true
	}
	t.Logf("%d expressions, %d distinct metrics checked", len(exprs), len(checked))
	// The signals the operator must be woken for each have a rule.
	all := strings.Join(slices.Collect(mapValues(ruleExprs(t))), "\n")
	for _, m := range []string{"crewcast_groups_paused", `crewcast_recipients{status="unconfirmed"}`, "crewcast_webhook_signature_failures_total",
		"crewcast_inbox_oldest_pending_age_seconds", "crewcast_store_commit_duration_seconds_bucket",
		"crewcast_webhook_out_endpoints_disabled_total", "crewcast_cluster_lease_lost_total", "crewcast_actor_dead_letters_total"} {
		if !strings.Contains(all, m) {
			t.Errorf("no alert rule on %s", m)
		}
	}
}

// TestOperationsDocListsEveryAlert: docs/operations.md's alert table has
// a row for each alert in the rules file (what fires and what to do).
func TestOperationsDocListsEveryAlert(t *testing.T) {
	b, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for alert := range ruleExprs(t) {
		if !strings.Contains(string(b), "| `"+alert+"` |") {
			t.Errorf("docs/operations.md has no row for alert %s", alert)
		}
	}
}

func mapValues(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// TestPromtool checks the rules file with promtool and runs the rule unit
// tests next to it (alerts fire, and only when they should).
func TestPromtool(t *testing.T) {
	promtool := requireTool(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", "prometheus/crewcast-alerts.yml"},
		{"test", "rules", "prometheus/crewcast-alerts_test.yml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
