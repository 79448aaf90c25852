// Package server assembles crewcast: store, providers, the group tracker and
// the HTTP API, with one lifecycle (Start, Stop). Tests boot it on
// 127.0.0.1:0.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Config is the server's configuration. Zero fields take the defaults
// stated on each field.
type Config struct {
	// Addr is the listen address. Default "127.0.0.1:8080"; ":0" ports are fine.
	Addr string
	// Logger receives structured logs. Default: discard.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Server is a running crewcast.
type Server struct {
	cfg  Config
	ln   net.Listener
	http *http.Server
	done chan error
}

// New builds a server; Start makes it listen.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	return &Server{
		cfg: cfg,
		http: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       15 * time.Second,
			WriteTimeout:      0, // SSE streams are long-lived; handlers set their own deadlines
			IdleTimeout:       60 * time.Second,
			MaxHeaderBytes:    64 << 10,
		},
		done: make(chan error, 1),
	}, nil
}

// Start listens and serves in the background.
func (s *Server) Start(ctx context.Context) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	go func() {
		err := s.http.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	s.cfg.Logger.Info("listening", "addr", ln.Addr().String())
	return nil
}

// URL is the base URL the server answers on.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Stop shuts down gracefully within ctx's deadline.
func (s *Server) Stop(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	err := s.http.Shutdown(ctx)
	if serr := <-s.done; err == nil {
		err = serr
	}
	return err
}
