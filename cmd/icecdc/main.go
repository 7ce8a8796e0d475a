// Command icecdc captures row-level changes of Apache Iceberg v3 tables.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
)

// version is the icecdc version reported in event envelopes.
var version = "0.1.0-dev"

const usage = `icecdc — change data capture for Apache Iceberg v3 tables

Usage:
  icecdc changes --metadata PATH [--table NS.NAME] [--from-seq N] [--to-seq M] [--net] [--columns a,b]
                 [--format debezium-json|table] [--with-key]
                 [--format debezium-connect-json [--time-precision-mode M] [--decimal-handling-mode M]
                  [--topic-prefix P]]
  icecdc changes --catalog-type sql --catalog-uri file:catalog.db --warehouse file:///wh --table ns.t
  icecdc run -c icecdc.yaml [--adopt-state]
                                     the daemon (first SIGINT/SIGTERM drains and exits 0; a second exits at once);
                                     --adopt-state accepts a state file that is empty or holds only another
                                     pipeline's checkpoints, starting every table from its configured start
  icecdc status -c icecdc.yaml       each table's checkpoint, head and lag
  icecdc reset -c icecdc.yaml --table NS.T | --all
                                     forget a table's checkpoint, or every table's (under exactly-once,
                                     the Kafka checkpoint records too) and its retention hold
  icecdc snapshot -c icecdc.yaml --table NS.T
                                     ask the running daemon to emit the table's rows as 'r' events
  icecdc demo [--dir DIR]
  icecdc version

Run 'icecdc COMMAND -h' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command; it returns the process exit code and prints
// any error as one line on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, restore the default handling: a second
		// signal ends the process at once.
		<-ctx.Done()
		stop()
	}()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if path := os.Getenv("ICECDC_CPUPROFILE"); path != "" {
		// A CPU profile of the whole command, for `go tool pprof`.
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "icecdc: ICECDC_CPUPROFILE %s: %v\n", path, err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	var err error
	switch args[0] {
	case "changes":
		err = cmdChanges(ctx, args[1:], stdout, stderr, log)
	case "run":
		err = cmdRun(ctx, args[1:], stdout, stderr)
	case "status":
		err = cmdStatus(ctx, args[1:], stdout)
	case "reset":
		err = cmdReset(ctx, args[1:], stdout)
	case "snapshot":
		err = cmdSnapshot(ctx, args[1:], stdout)
	case "demo":
		err = cmdDemo(ctx, args[1:], stdout, log)
	case "version":
		fmt.Fprintln(stdout, "icecdc", version)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "icecdc: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "icecdc:", oneLine(err.Error()))
		return 1
	}
	return 0
}

// oneLine keeps an error on one line: some library errors span several.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// propsFlag is a repeatable k=v flag.
type propsFlag map[string]string

func (p propsFlag) String() string { return "" }

func (p propsFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	p[k] = val
	return nil
}
