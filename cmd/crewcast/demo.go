package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/crewcast/crewcast/server"
)

func init() {
	register(command{name: "demo", summary: "run crewcast with the built-in demo provider and an example group", run: runDemo})
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	addr := fs.String("addr", envOr("CREWCAST_ADDR", "127.0.0.1:8080"), "listen address (CREWCAST_ADDR)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	srv, err := server.New(server.Config{Addr: *addr, Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "crewcast demo listening on %s (health: %s/healthz)\n", srv.URL(), srv.URL())
	fmt.Fprintln(stdout, "The delivery tracker is coming; press Ctrl-C to stop.")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Stop(sctx)
}
