package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

func init() {
	register(command{name: "version", summary: "print the version, from the build information", run: runVersion})
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: crewcast version   (or crewcast --version)\n\nPrints the module version, the VCS revision and time the binary was built\nfrom (with \"(modified)\" when the tree had local changes), the Go version and\nthe platform.\n")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	fmt.Fprintln(stdout, versionLine(info, runtime.GOOS+"/"+runtime.GOARCH))
	return nil
}

// versionLine describes a build: the module version (a tag, a
// pseudo-version, or "(devel)" for a build from a work tree), the VCS
// revision and time and whether the tree had local changes, the Go
// version and the platform.
func versionLine(info *debug.BuildInfo, platform string) string {
	if info == nil {
		return "crewcast (unknown version: built without module information) " + platform
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	parts := []string{"crewcast", v}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		vcs := "revision " + rev
		if t := settings["vcs.time"]; t != "" {
			vcs += " " + t
		}
		if settings["vcs.modified"] == "true" {
			vcs += " (modified)"
		}
		parts = append(parts, vcs)
	}
	parts = append(parts, info.GoVersion, platform)
	return strings.Join(parts, " ")
}
