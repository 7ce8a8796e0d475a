package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
)

func cmdDemo(ctx context.Context, args []string, stdout io.Writer, log *slog.Logger) error {
	return errors.New("demo: not built yet")
}
