package httpapi

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"sort"
)

// versionJSON is GET /v1/version: what the board's settings page shows of
// the running server (the same build facts as `crewcast version`).
type versionJSON struct {
	Version   string   `json:"version"`
	Revision  string   `json:"revision"`
	Modified  bool     `json:"modified"`
	Go        string   `json:"go"`
	Provider  string   `json:"provider"`
	Providers []string `json:"providers"`
	// QuietHours are new groups' default quiet hours ("21:00-07:00", ""
	// for none), in each recipient's zone, DefaultTimezone for those
	// without one.
	QuietHours      string `json:"quiet_hours"`
	DefaultTimezone string `json:"default_timezone"`
}

// buildVersion reads the binary's build information: the module version
// ("(devel)" for a build from a work tree) and the VCS revision.
func buildVersion() versionJSON {
	v := versionJSON{Version: "(devel)", Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// version reports the server's build, the provider it sends through, the
// providers whose webhooks it accepts and new groups' default quiet hours
// (admin).
func (a *api) version(w http.ResponseWriter, r *http.Request) error {
	v := buildVersion()
	v.Provider = a.cfg.SendingProvider
	if q := a.cfg.PolicyDefaults.Quiet; q != nil {
		v.QuietHours = q.String()
	}
	v.DefaultTimezone = a.cfg.PolicyDefaults.Timezone
	if v.DefaultTimezone == "" {
		v.DefaultTimezone = "UTC"
	}
	v.Providers = make([]string, 0, len(a.cfg.Providers))
	for name := range a.cfg.Providers {
		v.Providers = append(v.Providers, name)
	}
	sort.Strings(v.Providers)
	writeJSON(w, http.StatusOK, v)
	return nil
}
