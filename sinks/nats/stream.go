package nats

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/redact"
)

// prepare makes sure Config.Stream.Name stores subject, creating the
// stream when it is missing and Config.Stream.Create says so, and
// returns the stream's max_msg_size (-1: none). Once per subject.
func (s *Sink) prepare(ctx context.Context, js jetstream.JetStream, subject string) (int64, error) {
	if v, ok := s.subjects.Load(subject); ok {
		return v.(int64), nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	name := s.cfg.Stream.Name
	fail := func(permanent bool, format string, a ...any) (int64, error) {
		err := fmt.Errorf("nats subject %s: stream %s: %s", subject, name, fmt.Sprintf(format, a...))
		if permanent {
			err = cdc.Permanent(err)
		}
		return 0, err
	}
	found, err := js.StreamNameBySubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if !*s.cfg.Stream.Create {
			return fail(true, "no stream stores the subject (stream.create is false)")
		}
		if err := s.create(ctx, js); err != nil {
			return fail(permanentJS(err), "create: %s", redact.Text(err.Error()))
		}
		if found, err = js.StreamNameBySubject(ctx, subject); err != nil || found != name {
			return fail(true, "created with subjects %v, which do not cover the subject", s.cfg.Stream.Subjects)
		}
	case err != nil:
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return 0, err
		}
		return fail(permanentJS(err), "look up the subject's stream: %s", redact.Text(err.Error()))
	case found != name:
		return fail(true, "the subject is stored by stream %s (set stream.name to it, or change the subject)", found)
	}
	st, err := js.Stream(ctx, name)
	if err != nil {
		return fail(permanentJS(err), "%s", redact.Text(err.Error()))
	}
	max := int64(st.CachedInfo().Config.MaxMsgSize)
	if max <= 0 {
		max = -1
	}
	s.subjects.Store(subject, max)
	return max, nil
}

// create creates the stream from the configuration; a stream of that
// name created meanwhile is fine (the caller checks its subjects).
func (s *Sink) create(ctx context.Context, js jetstream.JetStream) error {
	c := s.cfg.Stream
	storage := jetstream.FileStorage
	if c.Storage == "memory" {
		storage = jetstream.MemoryStorage
	}
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       c.Name,
		Subjects:   slices.Clone(c.Subjects),
		Storage:    storage,
		Replicas:   c.Replicas,
		MaxAge:     c.MaxAge,
		Duplicates: c.DuplicateWindow,
	})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return nil
	}
	return err
}

// permanentJS tells a JetStream refusal no retry changes.
func permanentJS(err error) bool {
	var je jetstream.JetStreamError
	if !errors.As(err, &je) || je.APIError() == nil {
		return false
	}
	a := je.APIError()
	switch {
	case a.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabled, a.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabledForAccount:
		return true
	case a.Code == 400 || a.Code == 403:
		return true
	}
	return false
}
