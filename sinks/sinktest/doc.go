// Package sinktest is the contract suite every icecdc sink must pass, so
// that the pipeline can treat sinks alike (cdc.Sink).
//
// A sink's own test calls Run with a constructor that returns a fresh sink
// and a Reader of what its destination received: a kfake cluster for
// Kafka, an httptest receiver for webhooks. The suite writes batches that
// look like the pipeline's (Stream: Debezium JSON values, business keys
// that repeat across deletes, updates and re-inserts, stable event ids)
// and checks what arrived, right after each Write returns. A Reader that
// also implements FaultInjector lets the suite check failures: transient
// ones must end in delivery once the pipeline retries, and permanent ones
// must wrap cdc.ErrPermanent.
//
// The rule behind every check is the one the pipeline's checkpoints rest
// on: Write returning nil means the whole batch is at the destination, in
// order per key; an error may leave part of it there (at-least-once), and
// the resent batch must not reorder what a consumer that drops repeated
// ids sees.
package sinktest
