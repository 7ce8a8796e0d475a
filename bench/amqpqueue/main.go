// Command amqpqueue declares a durable queue bound to a durable topic
// exchange on a RabbitMQ broker, so that bench/delivery.sh's rabbitmq row
// measures messages stored by a queue, as a consumer's would be (the sink
// publishes mandatory messages: with no queue the broker returns them).
// It prints the queue's message count with -count.
//
//	go run ./bench/amqpqueue -url amqp://guest:guest@127.0.0.1:5672/ -exchange bench -queue bench
package main

import (
	"flag"
	"fmt"
	"os"

	amqp "github.com/rabbitmq/amqp091-go"
)

func main() {
	url := flag.String("url", "amqp://guest:guest@127.0.0.1:5672/", "the broker")
	exchange := flag.String("exchange", "bench", "the topic exchange, declared durable")
	queue := flag.String("queue", "bench", "the queue, declared durable, purged and bound with #")
	count := flag.Bool("count", false, "print the queue's message count instead")
	flag.Parse()
	if err := run(*url, *exchange, *queue, *count); err != nil {
		fmt.Fprintln(os.Stderr, "amqpqueue:", err)
		os.Exit(1)
	}
}

func run(url, exchange, queue string, count bool) error {
	conn, err := amqp.Dial(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if count {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			return err
		}
		fmt.Println(q.Messages)
		return nil
	}
	if err := ch.ExchangeDeclare(exchange, "topic", true, false, false, false, nil); err != nil {
		return err
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		return err
	}
	if _, err := ch.QueuePurge(queue, false); err != nil {
		return err
	}
	return ch.QueueBind(queue, "#", exchange, false, nil)
}
