package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/icecdc/icecdc/internal/suggest"
)

// cli is what every command writes to.
type cli struct {
	stdout, stderr io.Writer
	// log receives the sources' lifecycle messages of the one-shot
	// commands (the daemon makes its own, at INFO, in JSON).
	log *slog.Logger
}

// usageError is a command line that does not parse: exit 2, as Go's own
// flag package does, rather than 1 for a command that failed.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func init() {
	cobra.AddTemplateFunc("groupedFlags", groupedFlags)
}

// newRootCommand is icecdc and its subcommands.
func newRootCommand(e *cli) *cobra.Command {
	root := &cobra.Command{
		Use:   "icecdc",
		Short: "change data capture for Apache Iceberg v3 tables",
		Long: `icecdc reads the row-level changes of Apache Iceberg v3 tables (inserts, updates and deletes,
told apart by row lineage) and delivers them as Debezium-style events: once from the command line
(changes), or as a daemon that follows each table's new commits and checkpoints what it delivered (run).`,
		Version: buildVersionLine(),
		Example: `  icecdc demo --dir ./demo                     # a small v3 table and its change events
  icecdc run -c ./demo/icecdc.yaml             # follow it (the demo wrote this config)
  icecdc demo --dir ./demo --commit update     # one more commit, which the daemon delivers
  icecdc changes --catalog-uri file:./demo/catalog.db --warehouse file://$PWD/demo/warehouse --table bookshop.orders --format table`,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			// icecdc alone asks for help, as kubectl and gh take it:
			// the help on stdout, and success.
			return cmd.Help()
		},
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetUsageTemplate(usageTemplate)
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{fmt.Errorf("%s%s; see '%s --help'", commandPrefix(c), flagError(err), c.CommandPath())}
	})
	root.CompletionOptions.HiddenDefaultCmd = true
	root.AddGroup(
		&cobra.Group{ID: "read", Title: "Read changes:"},
		&cobra.Group{ID: "daemon", Title: "Run and operate the daemon:"},
	)
	for _, c := range []*cobra.Command{changesCommand(e), demoCommand(e)} {
		c.GroupID = "read"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{runCommand(e), statusCommand(e), resetCommand(e), snapshotCommand(e)} {
		c.GroupID = "daemon"
		root.AddCommand(c)
	}
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "print the version of icecdc, its commit and Go version",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(e.stdout, buildVersionLine())
			return err
		},
	})
	// cobra's own help command answers an unknown topic with the root
	// help and exit 0; this one names the unknown command, as icecdc
	// does for a command line.
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "print the help of icecdc or of a command",
		Args:  cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return unknownCommand(root, strings.Join(args, " "))
			}
			// As cobra's help command does: a command's help flag is
			// made when it runs, and its help lists it.
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	})
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	for _, c := range root.Commands() {
		c.Flags().SortFlags = false
	}
	return root
}

// execute runs the command line args (without the program name) under ctx.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	root := newRootCommand(&cli{stdout: stdout, stderr: stderr, log: log})
	root.SetArgs(singleDashLongFlags(root, args))
	return root.ExecuteContext(ctx)
}

// noArgs refuses operands: every input of a command is a flag.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{fmt.Errorf("%sunexpected argument %q; see '%s --help'", commandPrefix(cmd), args[0], cmd.CommandPath())}
	}
	return nil
}

// commandPrefix names a subcommand at the start of its errors ("run: "),
// as the commands' own errors do; main adds "icecdc: ".
func commandPrefix(c *cobra.Command) string {
	if !c.HasParent() {
		return ""
	}
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ") + ": "
}

// parseFailure is Go's text for a flag value that does not parse as a
// number or a boolean ("strconv.ParseInt: parsing "abc": invalid syntax"),
// which names Go's function and repeats the value.
var parseFailure = regexp.MustCompile(`strconv\.Parse(Int|Uint|Float|Bool): parsing "[^"]*": (invalid syntax|value out of range)`)

// flagError says in words what pflag's error says in Go's.
func flagError(err error) string {
	return parseFailure.ReplaceAllStringFunc(err.Error(), func(m string) string {
		sub := parseFailure.FindStringSubmatch(m)
		switch {
		case sub[2] == "value out of range":
			return "out of range"
		case sub[1] == "Int":
			return "want a whole number"
		case sub[1] == "Uint":
			return "want a whole number, 0 or more"
		case sub[1] == "Float":
			return "want a number"
		}
		return "want true or false"
	})
}

// checkChoice refuses a flag value that is not one of choices as a
// command line that does not parse (exit 2), with the nearest choice.
func checkChoice(cmd *cobra.Command, flag, value string, choices ...string) error {
	if slices.Contains(choices, value) {
		return nil
	}
	hint := ""
	if best := suggest.Closest(value, choices); best != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", best)
	}
	list := strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
	return &usageError{fmt.Errorf("%sinvalid argument %q for \"--%s\" flag: want %s%s; see '%s --help'",
		commandPrefix(cmd), value, flag, list, hint, cmd.CommandPath())}
}

func unknownCommand(root *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if s := root.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return &usageError{fmt.Errorf("%s; see 'icecdc --help'", msg)}
}

// singleDashLongFlags rewrites -name to --name, and --c to -c for the
// command's one-letter flags: icecdc's flags were Go flag package flags,
// which take either form, and scripts and unit files written then
// (-listen ADDR, -state PATH) keep working. pflag alone reads -listen as
// -l -i -s -t -e -n.
func singleDashLongFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	lookup := func(name string) *pflag.Flag {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		return cmd.InheritedFlags().Lookup(name)
	}
	short := func(name string) *pflag.Flag {
		if f := cmd.Flags().ShorthandLookup(name); f != nil {
			return f
		}
		return cmd.InheritedFlags().ShorthandLookup(name)
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		var f *pflag.Flag
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case strings.HasPrefix(a, "--"):
			if f = lookup(name); f == nil && len(name) == 1 {
				if f = short(name); f != nil {
					a = a[1:]
				}
			}
		case strings.HasPrefix(a, "-") && len(name) > 1:
			// Unless it is -cFILE (-c with its value attached), a name
			// that is no flag here is one too, and is refused as --name,
			// not as shorthands: status's -once is the unknown --once,
			// not -o with the value "nce".
			if f = lookup(name); f != nil || name[0] != 'c' || short("c") == nil {
				a = "-" + a
			}
		case strings.HasPrefix(a, "-") && len(name) == 1:
			f = short(name)
		}
		out = append(out, a)
		if f != nil && !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			// The flag's value, whatever it looks like.
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// configFlags name the config file and the settings a flag may override;
// each command offers the overrides it has a use for.
type configFlags struct {
	path, listen, statePath, sinkType, registryURL string
}

const (
	overrideListen = 1 << iota
	overrideState
	overrideSink
	overrideRegistry
)

func (f *configFlags) register(cmd *cobra.Command, overrides int) {
	fl := cmd.Flags()
	fl.StringVarP(&f.path, "config", "c", "icecdc.yaml", "config file")
	names := []string{"config"}
	if overrides&overrideListen != 0 {
		fl.StringVar(&f.listen, "listen", "", "override http.listen: the address the daemon serves /status, /metrics and /snapshot on")
		names = append(names, "listen")
	}
	if overrides&overrideState != 0 {
		fl.StringVar(&f.statePath, "state", "", "override state.path: the state file holding the checkpoints")
		names = append(names, "state")
	}
	if overrides&overrideSink != 0 {
		fl.StringVar(&f.sinkType, "sink", "", "override sink.type: "+(&SinkConfig{}).kindNames(nil)+"; the events keep the format the file's sink gets (its format, else that sink's default)")
		names = append(names, "sink")
	}
	if overrides&overrideRegistry != 0 {
		fl.StringVar(&f.registryURL, "schema-registry-url", "", "override schema_registry.url: the schema registry of format debezium-avro (Confluent's API); ${NAME} in it is expanded, so that a password need not show in the process list")
		names = append(names, "schema-registry-url")
	}
	groupFlags(fl, "Configuration", names...)
}

// load reads the config file with the overrides given.
func (f *configFlags) load() (*Config, error) {
	registryURL, err := expandFlag("schema-registry-url", f.registryURL, os.Getenv)
	if err != nil {
		return nil, err
	}
	// Applied before the file is checked: the check then sees the
	// settings the command runs with.
	cfg, err := loadConfig(f.path, func(c *Config) {
		if f.sinkType != "" {
			// Only where the events go changes: they keep the format
			// the file's sink gets, so that --sink stdout shows what
			// that sink would receive.
			if c.Format == "" {
				c.Format = defaultFormat(c.Sink.Type)
			}
			c.Sink.Type = f.sinkType
		}
		if registryURL != "" {
			c.SchemaRegistry.URL = registryURL
		}
	})
	if err != nil {
		return nil, err
	}
	if f.listen != "" {
		cfg.HTTP.Listen = f.listen
	}
	if f.statePath != "" {
		cfg.State.Path = f.statePath
	}
	return cfg, nil
}

// groupFlags puts flags under a heading of --help.
func groupFlags(fl *pflag.FlagSet, group string, names ...string) {
	for _, n := range names {
		if err := fl.SetAnnotation(n, "group", []string{group}); err != nil {
			panic(err) // a flag name misspelt in this file
		}
	}
}

// groupedFlags lists a command's flags by group, in the order they were
// declared; cobra lists them in one block.
func groupedFlags(c *cobra.Command) string {
	var order []string
	sets := map[string]*pflag.FlagSet{}
	add := func(f *pflag.Flag) {
		g := "Flags"
		if a := f.Annotations["group"]; len(a) > 0 {
			g = a[0]
		}
		if sets[g] == nil {
			order = append(order, g)
			sets[g] = pflag.NewFlagSet(g, pflag.ContinueOnError)
			sets[g].SortFlags = false
		}
		sets[g].AddFlag(f)
	}
	local := c.LocalFlags()
	local.SortFlags = false
	local.VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	var b strings.Builder
	for _, g := range order {
		fmt.Fprintf(&b, "\n\n%s:\n%s", g, strings.TrimRight(sets[g].FlagUsages(), "\n"))
	}
	return b.String()
}

const usageTemplate = `Usage:
{{- if and .Runnable .HasParent}}
  {{.UseLine}}
{{- end}}
{{- if .HasAvailableSubCommands}}
  {{.CommandPath}} COMMAND [flags]
{{- end}}
{{- if .HasExample}}

Examples:
{{.Example}}
{{- end}}
{{- if .HasAvailableSubCommands}}
{{- range $group := .Groups}}

{{.Title}}
{{- range $.Commands}}{{if and (eq .GroupID $group.ID) .IsAvailableCommand}}
  {{rpad .Name .NamePadding}} {{.Short}}{{end}}{{end}}
{{- end}}

Other commands:
{{- range .Commands}}{{if and (eq .GroupID "") (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding}} {{.Short}}{{end}}{{end}}
{{- end}}
{{- groupedFlags .}}
{{- if .HasAvailableSubCommands}}

Run '{{.CommandPath}} COMMAND --help' for a command's flags and examples.
{{- end}}
`

// plural is one when n is 1, else many: "1 event", "2 events".
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
