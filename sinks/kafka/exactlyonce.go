package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// endTxnTimeout bounds committing or aborting a transaction. Its context
// is detached from the caller's: franz-go warns that cancelling an
// EndTxn in flight leaves its outcome unknown, which is worse than a
// shutdown that waits a little.
const endTxnTimeout = 30 * time.Second

// ExactlyOnceSink delivers each batch in one Kafka transaction with its
// checkpoint record, so read_committed consumers see every event once and
// the checkpoint topic is the position of record (cdc.CheckpointSink).
// A transactional producer has one open transaction at a time, so Writes
// run one after the other, whatever the table.
type ExactlyOnceSink struct {
	p   *producer
	sem chan struct{} // held by the Write (or Close) that owns the transaction

	// unsettled is set, under sem, when a transaction may still be open
	// or its commit's outcome is unknown. The next Write first settles
	// it: it aborts, makes sure the broker finished the old transaction,
	// and reads the checkpoint topic, so that a batch whose commit did
	// land is not sent twice.
	unsettled bool
}

// Write produces b's messages and its checkpoint record to the
// checkpoint topic in one transaction, and commits it. It returns nil only
// once the commit is confirmed. When a record fails, the transaction is
// aborted and read_committed consumers never see any of b. When the commit
// itself fails with an unknown outcome, the transaction is aborted (which
// settles it either way) and the checkpoint topic says whether b made it.
// A batch whose checkpoint the topic already holds is not sent again.
//
// An empty batch still commits its checkpoint: here the checkpoint topic,
// not the pipeline's store, is the truth, and a snapshot without events
// must advance it too.
//
// A fenced producer (another daemon took over the transactional id) gets
// an error wrapping cdc.ErrPermanent. When franz-go's producer is left in
// a state it does not recover from by itself, Write replaces the client,
// whose new producer epoch makes the broker abort what the old one left
// open, and reports the failure; the pipeline's retry goes on from there.
func (s *ExactlyOnceSink) Write(ctx context.Context, b *cdc.Batch) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	p := s.p
	if p.closed.Load() {
		return errClosed
	}
	defer p.watch(ctx)()
	if err := p.ensureTopic(ctx, p.cfg.CheckpointTopic, 1, checkpointTopicConfigs); err != nil {
		return err
	}
	topic, err := p.ensureTopics(ctx, b)
	if err != nil {
		return err
	}
	ckpt, err := checkpointRecord(p.cfg, b)
	if err != nil {
		return err
	}
	if s.unsettled {
		done, err := s.settle(ctx, b)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}

	cl := p.client()
	if err := cl.BeginTransaction(); err != nil {
		err = classify(fmt.Errorf("begin transaction: %w", err))
		if !cdc.IsPermanent(err) {
			s.renew(err)
		}
		return err
	}
	if err := p.produceBatch(ctx, topic, b, ckpt); err != nil {
		if aerr := s.abort(ctx); aerr != nil {
			s.unsettled = true
			return errors.Join(err, aerr)
		}
		return err
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endTxnTimeout)
	defer cancel()
	if err := cl.EndTransaction(ectx, kgo.TryCommit); err != nil {
		err = classify(fmt.Errorf("commit transaction of %s: %w", b.Checkpoint, err))
		if cdc.IsPermanent(err) {
			return err
		}
		done, serr := s.settle(ctx, b)
		if serr != nil {
			s.unsettled = true
			return errors.Join(err, serr)
		}
		if done {
			p.cfg.Logger.Info("kafka commit returned an error, but its checkpoint shows it landed", "checkpoint", b.Checkpoint.String(), "err", err)
			return nil
		}
		return err
	}
	return nil
}

// checkpointTopicConfigs make the checkpoint topic keep the last record
// per key forever: that record is the position of its table.
var checkpointTopicConfigs = map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}

// checkpointKey names a table's checkpoint record.
func checkpointKey(pipeline string, t cdc.TableInfo) string {
	return pipeline + "/" + t.Namespace + "." + t.Name
}

func checkpointRecord(cfg Config, b *cdc.Batch) (*kgo.Record, error) {
	v, err := json.Marshal(b.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint %s: %w", b.Checkpoint, err)
	}
	r := &kgo.Record{Topic: cfg.CheckpointTopic, Key: []byte(checkpointKey(cfg.Pipeline, b.Table)), Value: v}
	if cfg.Owner != nil {
		member, gen := cfg.Owner()
		r.Headers = []kgo.RecordHeader{
			{Key: HeaderOwner, Value: []byte(member)},
			{Key: HeaderGeneration, Value: []byte(strconv.FormatInt(int64(gen), 10))},
		}
	}
	return r, nil
}

// Headers of a checkpoint record written with Config.Owner set.
const (
	HeaderOwner      = "owner"
	HeaderGeneration = "generation"
)

// CheckpointKey names a table's checkpoint record in the checkpoint
// topic: <pipeline>/<namespace>.<table>.
func CheckpointKey(pipeline string, t cdc.TableInfo) string { return checkpointKey(pipeline, t) }

// abort ends the open transaction, if any, with an abort. After an
// unconfirmed commit franz-go's abort reloads the producer id, which bumps
// the epoch and fence-aborts whatever the broker still holds open. When
// franz-go cannot abort (its producer id is in a state it gives up on),
// a new client takes over, and the next settle loads its producer id,
// which aborts the old transaction the same way.
func (s *ExactlyOnceSink) abort(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endTxnTimeout)
	defer cancel()
	cl := s.p.client()
	err := cl.AbortBufferedRecords(ctx)
	if err == nil {
		err = cl.EndTransaction(ctx, kgo.TryAbort)
	}
	if err == nil {
		return nil
	}
	err = classify(fmt.Errorf("abort transaction: %w", err))
	if cdc.IsPermanent(err) {
		return err
	}
	s.renew(err)
	return nil
}

// renew replaces the producing client after franz-go gave up on its
// producer id. The transaction the old client may have left open is
// aborted by the broker when the new one loads its producer id; until a
// settle has seen that happen, the sink is unsettled.
func (s *ExactlyOnceSink) renew(cause error) {
	s.unsettled = true
	cl, err := kgo.NewClient(s.p.opts...)
	if err != nil {
		// The same options built the first client: this cannot fail.
		s.p.cfg.Logger.Error("cannot restart the kafka transactional producer", "err", err)
		return
	}
	s.p.cl.Swap(cl).Close()
	s.p.cfg.Logger.Info("restarted the kafka transactional producer", "transactional_id", s.p.cfg.TransactionalID, "cause", cause)
}

// resolve finishes a transaction that an earlier failure left in doubt:
// it aborts what is open and loads the producer id. Loading it
// (InitProducerID, after an abort that needed it or on a new client)
// returns only once the broker has finished the previous transaction of
// this transactional id, committed or aborted; after that the checkpoint
// topic is final for it.
func (s *ExactlyOnceSink) resolve(ctx context.Context) error {
	if err := s.abort(ctx); err != nil {
		return err
	}
	if _, _, err := s.p.client().ProducerID(ctx); err != nil {
		err = classify(fmt.Errorf("init producer id: %w", err))
		if !cdc.IsPermanent(err) {
			s.renew(err)
		}
		return err
	}
	return nil
}

// settle resolves what an earlier failure left in doubt and reports
// whether the checkpoint topic already holds b's checkpoint (or a later
// one), that is, whether b was committed after all.
func (s *ExactlyOnceSink) settle(ctx context.Context, b *cdc.Batch) (committed bool, err error) {
	if err := s.resolve(ctx); err != nil {
		return false, err
	}
	cp, ok, err := s.restore(ctx, s.p.cfg.Pipeline, b.Table)
	if err != nil {
		return false, fmt.Errorf("read checkpoint to settle a failed transaction: %w", err)
	}
	s.unsettled = false
	return ok && cp.TableUUID == b.Checkpoint.TableUUID && !cp.Before(b.Checkpoint), nil
}

// Restore returns the table's last committed checkpoint: it reads the
// checkpoint topic to its last stable offset as a read_committed consumer
// and keeps the last record with the table's key,
// <pipeline>/<namespace>.<table> (Write uses Config.Pipeline, so pipeline
// should be the same name). Checkpoints of aborted transactions are never
// seen.
//
// Before reading, Restore loads the producer id. That makes the broker
// finish whatever this transactional id left open, a crashed daemon's
// transaction or a commit a failed Write left in doubt, so the position
// read is final: the pipeline restores after every error and on start.
// It also fences an older daemon still running with the same id.
func (s *ExactlyOnceSink) Restore(ctx context.Context, pipeline string, table cdc.TableInfo) (cdc.Checkpoint, bool, error) {
	if err := s.acquire(ctx); err != nil {
		return cdc.Checkpoint{}, false, err
	}
	defer s.release()
	// unsettled stays set: the next Write still checks that its batch
	// is not the one whose commit landed, for callers that retry without
	// restoring.
	if err := s.resolve(ctx); err != nil {
		return cdc.Checkpoint{}, false, fmt.Errorf("restore checkpoint: %w", err)
	}
	return s.restore(ctx, pipeline, table)
}

func (s *ExactlyOnceSink) restore(ctx context.Context, pipeline string, table cdc.TableInfo) (cdc.Checkpoint, bool, error) {
	key := checkpointKey(pipeline, table)
	var last []byte
	found := false
	err := readToEnd(ctx, s.p.base, true, []string{s.p.cfg.CheckpointTopic}, func(r *kgo.Record) {
		if string(r.Key) == key {
			last, found = r.Value, r.Value != nil // a null value deletes the key
		}
	})
	if err != nil {
		return cdc.Checkpoint{}, false, fmt.Errorf("restore checkpoint %s from %s: %w", key, s.p.cfg.CheckpointTopic, err)
	}
	if !found {
		return cdc.Checkpoint{}, false, nil
	}
	var cp cdc.Checkpoint
	if err := json.Unmarshal(last, &cp); err != nil {
		return cdc.Checkpoint{}, false, fmt.Errorf("restore checkpoint %s from %s: decode: %w", key, s.p.cfg.CheckpointTopic, err)
	}
	return cp, true, nil
}

// Close waits for a Write in progress (until ctx is done), then flushes and
// closes the client.
func (s *ExactlyOnceSink) Close(ctx context.Context) error {
	if err := s.acquire(ctx); err != nil {
		// A Write still owns the transaction: end it the hard way; the
		// broker aborts it when the transaction times out.
		s.p.closed.Store(true)
		s.p.client().Close()
		return fmt.Errorf("close kafka sink: %w", err)
	}
	defer s.release()
	return s.p.close(ctx)
}

func (s *ExactlyOnceSink) acquire(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *ExactlyOnceSink) release() { <-s.sem }

// RetainsNoBatch: see Sink.RetainsNoBatch; a transaction's records are
// all acknowledged before it ends.
func (s *ExactlyOnceSink) RetainsNoBatch() {}
