// Package rabbitmq is the RabbitMQ sink (AMQP 0-9-1): each table's events
// are published to an exchange (Config.Exchange) with a routing key
// (Config.RoutingKey), both templates.
//
// The model. One event is one persistent message: its body the event's
// value, message_id the event id, content_type the format's, and the
// headers the Kafka sink writes (id, op, sequence_number, snapshot_id,
// the format's own) plus key, the event key. The channel is in confirm
// mode: a batch is published at once and Write returns only when the
// broker confirmed every message (for a durable queue: written to it),
// so the checkpoint moves after the confirms. Messages are mandatory
// (Config.Mandatory, default true): one the exchange routes to no queue
// comes back and stops the table naming the event, instead of vanishing.
// The exchange is declared (durable) or, with Config.Declare false,
// checked to exist, once per name.
package rabbitmq
