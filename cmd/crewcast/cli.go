package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// command is one crewcast subcommand. Each lives in its own file and
// registers itself in init.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// Exit codes (documented in `crewcast help` and README.md).
const (
	exitOK         = 0 // done; for send: every recipient delivered (or opted out / canceled)
	exitFailed     = 1 // an error, or send ended with failed, unconfirmed or unknown recipients
	exitUsage      = 2 // a wrong argument, flag or environment value
	exitIncomplete = 3 // send stopped following (Ctrl-C) before every recipient had an outcome
)

// errUsage marks an error whose message is already printed by the flag set.
var errUsage = errors.New("usage")

// usageError is a usage error with its own message (printed by run).
type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == errUsage }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// exitError ends a command with a given exit code after its output has
// said why (send with failed recipients).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "crewcast: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	err := c.run(ctx, args[1:], stdout, stderr)
	var ee exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		if err != errUsage {
			fmt.Fprintf(stderr, "crewcast %s: %v\n", c.name, err)
		}
		return exitUsage
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "crewcast %s: %s\n", c.name, ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "crewcast %s: %v\n", c.name, err)
	return exitFailed
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "crewcast — send one message to many people and track what happened to each.")
	fmt.Fprintln(w, "\nUsage: crewcast <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, commands[n].summary)
	}
	fmt.Fprint(w, `
Client commands (keys, users, senders, send, status, report, cancel, retry,
resolve, contacts, crews, templates, groups) talk to a running server at CREWCAST_URL
(--url, default http://127.0.0.1:8080) with the API key in CREWCAST_KEY
(--key). 'crewcast demo' prints both.

Exit codes: 0 done; 1 an error, or (send) recipients that failed, are
unconfirmed or unknown; 2 a wrong argument, flag or environment value;
3 send stopped following before every recipient had an outcome.

Run 'crewcast <command> -h' for a command's flags.
`)
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("crewcast "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args, mapping flag errors to errUsage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (this command takes flags only; see '%s -h')", fs.Arg(0), fs.Name())
	}
	return nil
}

// envBinding ties a flag to the environment variable that fills it when
// the flag is not given (flags win). Bound values are applied after
// parsing, so -h shows the built-in defaults, never a secret from the
// environment.
type envBinding struct{ flag, env string }

// applyEnv sets each flag not given on the command line from its
// environment variable. A value that does not parse is an error naming the
// variable: a typo must not silently mean the default.
func applyEnv(fs *flag.FlagSet, bindings []envBinding) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var msgs []string
	for _, b := range bindings {
		v, ok := os.LookupEnv(b.env)
		if !ok || v == "" || given[b.flag] || fs.Lookup(b.flag) == nil {
			continue
		}
		if err := fs.Set(b.flag, strings.TrimSpace(v)); err != nil {
			msgs = append(msgs, fmt.Sprintf("%s=%q: want %s", b.env, v, valueKind(fs.Lookup(b.flag))))
		}
	}
	if len(msgs) > 0 {
		return usagef("environment: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// valueKind says in words what a flag's value must look like.
func valueKind(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "a valid value"
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 90s, 30m or 24h (negative: never, where allowed)"
	case float64:
		return "a number such as 10 or 0.5"
	case int:
		return "a whole number"
	case bool:
		return "true or false"
	}
	return "a valid value"
}

// envOr returns the environment variable's value, or def when unset.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// flagSection is a titled group of flags in a command's -h, each with the
// environment variable that fills it ("" for none).
type flagSection struct {
	title string
	flags []envBinding
}

// sectionBindings returns the environment bindings of sections.
func sectionBindings(sections []flagSection) []envBinding {
	var out []envBinding
	for _, s := range sections {
		for _, b := range s.flags {
			if b.env != "" {
				out = append(out, b)
			}
		}
	}
	return out
}

// printFlagSections prints fs's flags grouped by sections; flags that no
// section names come last, under "Other".
func printFlagSections(w io.Writer, fs *flag.FlagSet, sections []flagSection) {
	listed := map[string]bool{}
	for _, s := range sections {
		fmt.Fprintf(w, "%s:\n", s.title)
		for _, b := range s.flags {
			if f := fs.Lookup(b.flag); f != nil {
				printFlag(w, f, b.env)
				listed[b.flag] = true
			}
		}
		fmt.Fprintln(w)
	}
	var other []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !listed[f.Name] {
			other = append(other, f)
		}
	})
	if len(other) > 0 {
		fmt.Fprintln(w, "Other:")
		for _, f := range other {
			printFlag(w, f, "")
		}
		fmt.Fprintln(w)
	}
}

// printFlag prints one flag: "  --name TYPE   [env VAR]" then its usage
// and default on an indented line.
func printFlag(w io.Writer, f *flag.Flag, env string) {
	typ, usage := flag.UnquoteUsage(f)
	head := "  --" + f.Name
	if typ != "" {
		head += " " + typ
	}
	if env != "" {
		head = fmt.Sprintf("%-36s %s", head, env)
	}
	fmt.Fprintln(w, head)
	if def := shortDuration(f.DefValue); def != "" && def != "false" && def != "0" {
		usage += " (default " + def + ")"
	}
	fmt.Fprintf(w, "        %s\n", usage)
}

// shortDuration drops the zero tails of a printed duration: "720h0m0s" is
// "720h", "15m0s" is "15m". Other values are returned as they are.
func shortDuration(s string) string {
	if _, err := time.ParseDuration(s); err != nil || s == "0s" {
		return s
	}
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
