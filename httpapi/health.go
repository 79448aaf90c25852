package httpapi

import (
	"context"
	_ "embed" // the OpenAPI document
	"net/http"
	"time"
)

// openapiYAML is a copy of docs/openapi.yaml (go generate keeps it in
// step; TestOpenAPICopyMatchesDocs fails when they differ).
//
//go:generate cp ../docs/openapi.yaml openapi.yaml
//go:embed openapi.yaml
var openapiYAML []byte

func (a *api) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

type readyJSON struct {
	Status           string `json:"status"`
	Engine           string `json:"engine"`
	MigrationVersion int64  `json:"migration_version"`
}

// readyz reports whether the store answers and its schema is current.
func (a *api) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	notReady := func(msg string) error { return newError(http.StatusServiceUnavailable, codeNotReady, msg) }
	if err := a.store.Ping(ctx); err != nil {
		a.log.WarnContext(ctx, "readiness: store ping failed", "err", err.Error())
		return notReady("store unavailable")
	}
	v, err := a.store.MigrationVersion(ctx)
	if err != nil {
		a.log.WarnContext(ctx, "readiness: migration version failed", "err", err.Error())
		return notReady("store unavailable")
	}
	if v < a.cfg.MinMigrationVersion {
		return notReady("database schema is older than this version of crewcast; run crewcast migrate")
	}
	writeJSON(w, http.StatusOK, readyJSON{Status: "ready", Engine: a.store.Engine(), MigrationVersion: v})
	return nil
}

func (a *api) metricsHandler(w http.ResponseWriter, r *http.Request) error {
	a.metricsHTTP.ServeHTTP(w, r)
	return nil
}

func (a *api) openapi(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(openapiYAML)
	return nil
}

func (a *api) debugActors(w http.ResponseWriter, r *http.Request) error {
	return debugSnapshot(w, a.cfg.DebugActors)
}

func (a *api) debugDeadLetters(w http.ResponseWriter, r *http.Request) error {
	return debugSnapshot(w, a.cfg.DebugDeadLetters)
}

func debugSnapshot(w http.ResponseWriter, fn func() any) error {
	if fn == nil {
		return newError(http.StatusNotFound, codeNotFound, "not available on this server")
	}
	writeJSON(w, http.StatusOK, fn())
	return nil
}
