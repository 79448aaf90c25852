package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// Helpers that every client command repeated: its usage text, its
// positional arguments, and the choice of a subcommand.

// setUsage makes fs's -h print text and then the flags' defaults.
func setUsage(fs *flag.FlagSet, text string) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), text)
		fs.PrintDefaults()
	}
}

// positionals parses args (flags before or after the positionals) and
// wants exactly n positionals, described by what when they are wrong.
func positionals(fs *flag.FlagSet, args []string, n int, what string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if err := wantArgs(fs, pos, n, what); err != nil {
		return nil, err
	}
	return pos, nil
}

// pickSubcommand checks args[0] against names for "crewcast cmd": with
// no argument it prints usage (errUsage); with -h, --help or help it
// prints usage (flag.ErrHelp); an unknown one is named on stderr as
// "unknown <noun>" before usage (errUsage).
func pickSubcommand(cmd, noun string, args []string, usage func(), stderr io.Writer, names ...string) (string, error) {
	if len(args) == 0 {
		usage()
		return "", errUsage
	}
	for _, n := range names {
		if args[0] == n {
			return n, nil
		}
	}
	switch args[0] {
	case "-h", "--help", "help":
		usage()
		return "", flag.ErrHelp
	}
	fmt.Fprintf(stderr, "crewcast %s: unknown %s %q\n", cmd, noun, args[0])
	usage()
	return "", errUsage
}

// subcommandFunc runs one subcommand with the arguments after its name.
type subcommandFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// runSubcommand runs the subcommand args[0] of "crewcast cmd" from subs
// (see pickSubcommand for what else args[0] may be).
func runSubcommand(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer, usage func(), subs map[string]subcommandFunc) error {
	names := make([]string, 0, len(subs))
	for n := range subs {
		names = append(names, n)
	}
	sub, err := pickSubcommand(cmd, "subcommand", args, usage, stderr, names...)
	if err != nil {
		return err
	}
	return subs[sub](ctx, args[1:], stdout, stderr)
}
