// Package webhook is the webhook sink: it POSTs each cdc.Batch to one URL as
// one or more JSON bodies, signed the Standard Webhooks way.
//
// The model. A batch is cut, in order, into requests of at most
// Config.Batch.MaxEvents events and Config.Batch.MaxBytes bytes of body.
// Requests go out strictly one at a time, and Write returns only after the
// receiver answered 2xx to every one of them, so the pipeline's checkpoint
// never passes an undelivered event.
//
// Delivery is at least once. A request that failed in a way retrying can
// fix (a network error, a timeout, 408, 429, 5xx) is sent again with
// exponential backoff and full jitter, honouring Retry-After, with the same
// body and the same webhook-id: a receiver that already stored it before
// its answer was lost deduplicates on that id (or on the event ids inside).
// Other 4xx answers are permanent (the error wraps cdc.ErrPermanent and the
// table stops) and 410 Gone also wraps cdc.ErrDisabled. Redirects are not
// followed: a POST redirected with 301/302/303 would silently become a GET,
// so a 3xx is a permanent error asking for the final URL.
//
// Bodies are a JSON array of the encoded events, or, with
// Config.CloudEvents, a CloudEvents JSON batch
// (application/cloudevents-batch+json) whose "data" is the encoded event.
// Headers: webhook-id (the event id of a single event, "<first>..<last>"
// for several), webhook-timestamp (unix seconds, fresh on every attempt)
// and webhook-signature ("v1," + base64 HMAC-SHA256 of
// id + "." + timestamp + "." + body). Verify checks them on the receiving
// side.
package webhook
